// Proves tracing is off by default (a no-op provider: spans do not
// record) and, with an endpoint, exports over OTLP/HTTP: a fake collector
// receives the span, protobuf-decoded, with the service's name; and the
// logger's format and level flags are checked.
package telemetry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestTracingOffByDefault(t *testing.T) {
	tp, shutdown, err := SetupTracing(context.Background(), TraceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	_, span := tp.Tracer("t").Start(context.Background(), "probe")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Fatal("without an endpoint a span records: tracing is not off")
	}
	span.End()
}

func TestTracingExportsOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var got []*coltracepb.ExportTraceServiceRequest
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, req) != nil {
			http.Error(w, "bad", 400)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	defer collector.Close()
	tp, shutdown, err := SetupTracing(context.Background(), TraceConfig{OTLPEndpoint: collector.URL, ServiceName: "fencegate-test", Version: "v0"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("t").Start(context.Background(), "probe")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var names, services []string
	for _, req := range got {
		for _, rs := range req.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					services = append(services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names = append(names, s.GetName())
				}
			}
		}
	}
	if strings.Join(names, ",") != "probe" || strings.Join(services, ",") != "fencegate-test" {
		t.Fatalf("collector got spans %v from services %v", names, services)
	}
}

func TestLoggerFlags(t *testing.T) {
	var b bytes.Buffer
	l, err := NewLogger(&b, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	if s := b.String(); strings.Contains(s, "hidden") || !strings.Contains(s, `"msg":"shown","k":1`) {
		t.Fatalf("json/warn logger wrote %q", s)
	}
	for _, bad := range [][2]string{{"xml", "info"}, {"text", "loud"}} {
		if _, err := NewLogger(&b, bad[0], bad[1]); err == nil {
			t.Errorf("NewLogger(%q, %q) accepted", bad[0], bad[1])
		}
	}
	if CheckEndpoint("collector:4318") == nil || CheckEndpoint("http://collector:4318") != nil {
		t.Error("CheckEndpoint")
	}
}
