// This file measures the SDK's acquire/release path as a user calls it:
// Session.Acquire then Lease.Release against a real registry on an
// in-memory store, in process (registry.Direct: the session and the
// cores alone) and over HTTP (httpclient.Client against the registry's
// HTTP API on a loopback server, with and without batching). Timings and
// allocations are reported, never asserted:
//
//	go test ./client/httpclient -run '^$' -bench SessionCycle -benchmem -count 6
package httpclient_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

// BenchmarkSessionCycle is one Session.Acquire and Lease.Release of a
// free resource per op, on the system clock with renewals armed.
func BenchmarkSessionCycle(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		reg := benchRegistry(b)
		sessionCycles(b, registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerA})
	})
	b.Run("http", func(b *testing.B) { sessionCycles(b, benchHTTPClient(b)) })
	b.Run("http-batch", func(b *testing.B) {
		sessionCycles(b, benchHTTPClient(b, httpclient.WithBatching(httpclient.BatchOptions{})))
	})
}

func benchRegistry(b *testing.B) *clienttest.Registry {
	reg, err := clienttest.NewRegistry(clock.System{}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return reg
}

// benchHTTPClient is a Client for OwnerA against the registry's HTTP API
// on a loopback server of its own.
func benchHTTPClient(b *testing.B, opts ...httpclient.ClientOption) *httpclient.Client {
	reg := benchRegistry(b)
	auth, err := httpapi.ParseTokenFile([]byte(tokA + " " + clienttest.OwnerA + "\n"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := httpapi.NewServer(httpapi.Config{Registry: reg.Registry, Auth: auth, Authorizer: httpapi.AllowAll{}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s)
	b.Cleanup(srv.Close)
	opts = append([]httpclient.ClientOption{httpclient.WithBearerToken(tokA), httpclient.WithVerifier(reg.Verifier)}, opts...)
	c, err := httpclient.NewClient(srv.URL, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func sessionCycles(b *testing.B, t client.Transport) {
	s := client.NewSession(t, client.Options{})
	ctx := context.Background()
	req := wire.AcquireRequest{Resource: clienttest.Resource, OperationClass: "bench", TTLMs: 30_000}
	b.ReportAllocs()
	for b.Loop() {
		l, err := s.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
