// This file measures what the HTTP API adds around the registry on the
// hot path, with no network: an acquire and a release through
// Server.ServeHTTP (authentication, policy, strict decoding, metrics,
// span, response encoding; and again with the request log on) against
// the same calls on the registry, over one in-memory store. Timings and allocations are reported, never
// asserted:
//
//	go test ./registry/httpapi -run '^$' -bench HandlerCycle -benchmem -count 5
package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

func benchServer(b *testing.B) (*Server, *registry.Registry) { return benchServerWith(b, false) }

// benchServerWith is benchServer with the request log on or off (JSON
// lines to io.Discard: the cost of building and encoding them).
func benchServerWith(b *testing.B, requestLog bool) (*Server, *registry.Registry) {
	key, err := grant.GenerateKey(grant.AlgEd25519, "bench-key", rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	m := NewMetrics()
	reg, err := registry.New(InstrumentStore(memstore.New(), m), registry.DefaultConfig(1), clock.System{}, key)
	if err != nil {
		b.Fatal(err)
	}
	tokens, err := ParseTokenFile([]byte(tokAlice + " alice\n"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewServer(Config{Registry: reg, Auth: tokens, Authorizer: AllowAll{}, Metrics: m, RequestLog: requestLog,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return s, reg
}

// serveCall sends one JSON POST to s and decodes a 200's body into out.
func serveCall(b *testing.B, s *Server, path string, in, out any) {
	body, _ := json.Marshal(in)
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+tokAlice)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		b.Fatalf("%s: %d %s", path, w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkHandlerCycle(b *testing.B) {
	b.Run("http-api", func(b *testing.B) { handlerCycles(b, false) })
	b.Run("http-api-request-log", func(b *testing.B) { handlerCycles(b, true) })
	b.Run("http-api-batch", batchCycles)
	b.Run("registry", func(b *testing.B) {
		_, reg := benchServer(b)
		ctx := context.Background()
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			is, err := reg.Acquire(ctx, "alice", wire.AcquireRequest{Resource: "bench/1", OperationID: "op", OperationClass: "bench",
				RequestID: fmt.Sprint("r", n), TTLMs: 30_000})
			if err == nil {
				err = reg.Release(ctx, "alice", "bench/1", is.Grant.Lease)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// handlerCycles runs acquire+release cycles through ServeHTTP.
func handlerCycles(b *testing.B, requestLog bool) {
	s, _ := benchServerWith(b, requestLog)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		var is wire.IssuedResponse
		serveCall(b, s, "/v1/acquire", wire.AcquireRequest{Resource: "bench/1", OperationID: "op", OperationClass: "bench",
			RequestID: fmt.Sprint("r", n), TTLMs: 30_000}, &is)
		g, err := grant.ParseGrant([]byte(is.Grant))
		if err != nil {
			b.Fatal(err)
		}
		var rel wire.ReleaseResponse
		serveCall(b, s, "/v1/release", wire.LeaseRequest{Resource: "bench/1", Lease: g.Lease}, &rel)
	}
}

// batchResources is how many cycles one pair of batches carries: about
// what the SDK's batches carry at 64 resources.
const batchResources = 16

// batchCycles runs cycles through POST /v1/batch, with the request log
// on as serve has it: one op is one batch of batchResources acquires and
// one of their releases, the caller's encoding of them and parsing of the
// grants included; ns/cycle is the op's time per cycle.
func batchCycles(b *testing.B) {
	s, _ := benchServerWith(b, true)
	b.ReportAllocs()
	n := 0
	acq := wire.BatchRequest{Operations: make([]wire.BatchOperation, batchResources)}
	rel := wire.BatchRequest{Operations: make([]wire.BatchOperation, batchResources)}
	defer func() { b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchResources), "ns/cycle") }()
	for b.Loop() {
		for i := range acq.Operations {
			body, _ := json.Marshal(wire.AcquireRequest{Resource: fmt.Sprint("bench/", i), OperationID: "op", OperationClass: "bench",
				RequestID: fmt.Sprint("r", n+i), TTLMs: 30_000})
			acq.Operations[i] = wire.BatchOperation{Op: wire.BatchAcquire, Request: body}
		}
		n += batchResources
		var out wire.BatchResponse
		serveCall(b, s, "/v1/batch", acq, &out)
		for i, a := range out.Answers {
			var is wire.IssuedResponse
			if a.Status != http.StatusOK || json.Unmarshal(a.Answer, &is) != nil {
				b.Fatalf("acquire %d: %d %+v", i, a.Status, a.Error)
			}
			g, err := grant.ParseGrant([]byte(is.Grant))
			if err != nil {
				b.Fatal(err)
			}
			body, _ := json.Marshal(wire.LeaseRequest{Resource: g.Resource, Lease: g.Lease})
			rel.Operations[i] = wire.BatchOperation{Op: wire.BatchRelease, Request: body}
		}
		serveCall(b, s, "/v1/batch", rel, &out)
		for i, a := range out.Answers {
			if a.Status != http.StatusOK {
				b.Fatalf("release %d: %d %+v", i, a.Status, a.Error)
			}
		}
	}
}
