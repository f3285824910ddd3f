// Proves one trace runs from a worker's acquire at the registry through
// the gate's decision on its write, with the fence and outcome as span
// attributes (W3C trace context over both HTTP hops); and, as the negative
// control, that without a propagator the decision lands in another trace.
package ledger_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate/gatetrace"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memstore"
)

// tracedWorld is a registry and a ledger sharing one span recorder.
func tracedWorld(t *testing.T, tp *sdktrace.TracerProvider) (regURL, ledgerURL string) {
	t.Helper()
	key, err := grant.GenerateKey(grant.AlgEd25519, "trace-test", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := grant.NewBundle(httpapi.BundleFor(key, "", ""), "")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(memstore.New(), registry.DefaultConfig(1), clock.System{}, key)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := httpapi.ParseTokenFile([]byte(tokA + " worker-a\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := httpapi.NewServer(httpapi.Config{Registry: reg, Auth: tokens, Authorizer: httpapi.AllowAll{}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	rsrv := httptest.NewServer(rs)
	t.Cleanup(rsrv.Close)
	db, pg, err := ledger.OpenDB(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ls, err := ledger.NewServer(context.Background(), ledger.Config{DB: db, Postgres: pg, Verifier: grant.NewVerifier(bundle, 0), Auth: tokens, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	lsrv := httptest.NewServer(ls)
	t.Cleanup(lsrv.Close)
	return rsrv.URL, lsrv.URL
}

// settle runs one worker under a root span and returns the recorded spans
// and the root's trace ID.
func settle(t *testing.T, prop propagation.TextMapPropagator) (spans []sdktrace.ReadOnlySpan, root string) {
	t.Helper()
	old := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(prop)
	t.Cleanup(func() { otel.SetTextMapPropagator(old) })
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	regURL, ledgerURL := tracedWorld(t, tp)
	rc, err := httpclient.NewClient(regURL, httpclient.WithBearerToken(tokA), httpclient.WithHeaders(func(ctx context.Context, h http.Header) {
		otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("worker").Start(context.Background(), "settle invoices")
	res, err := ledger.RunWorker(ctx, ledger.WorkerConfig{Name: "A", Registry: rc, Ledger: &ledger.Client{Base: ledgerURL, Token: tokA},
		Resource: "invoice-batch/2026-07-19", OperationID: "settle-1", Entries: entries(1), TTL: 10 * time.Second})
	span.End()
	if err != nil || !res.Written {
		t.Fatalf("worker: %+v %v", res, err)
	}
	return rec.Ended(), span.SpanContext().TraceID().String()
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestOneTraceFromAcquireToGateDecision(t *testing.T) {
	spans, root := settle(t, propagation.TraceContext{})
	var acquire, decision sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch s.Name() {
		case "POST /v1/acquire":
			acquire = s
		case gatetrace.SpanName:
			decision = s
		}
	}
	if acquire == nil || decision == nil {
		t.Fatalf("spans %v: want the acquire and the gate decision", names(spans))
	}
	for _, s := range []sdktrace.ReadOnlySpan{acquire, decision} {
		if got := s.SpanContext().TraceID().String(); got != root {
			t.Errorf("%s is in trace %s, not the worker's %s", s.Name(), got, root)
		}
	}
	a, d := attrs(acquire), attrs(decision)
	if a["fencegate.fence"].AsInt64() != 1 || a["fencegate.outcome"].AsString() != "ok" || a["fencegate.identity"].AsString() != "worker-a" {
		t.Errorf("acquire span attributes %v", a)
	}
	if d[gatetrace.AttrFence].AsInt64() != 1 || d[gatetrace.AttrOutcome].AsString() != "ACCEPTED" || d[gatetrace.AttrResource].AsString() != "invoice-batch/2026-07-19" {
		t.Errorf("decision span attributes %v", d)
	}
}

func TestWithoutPropagatorTheTraceBreaks(t *testing.T) {
	spans, root := settle(t, propagation.NewCompositeTextMapPropagator())
	for _, s := range spans {
		if s.Name() == gatetrace.SpanName && s.SpanContext().TraceID().String() == root {
			t.Fatal("the decision joined the worker's trace with no propagator: the test above proves nothing")
		}
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
