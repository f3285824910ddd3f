// This file proves the SDK's default HTTP client reuses its connections to
// the registry when a worker calls from many goroutines at once: 64
// goroutines making 20 acquire+release cycles each open at most two
// connections each (a call may start before its goroutine's last
// connection is back in the pool), where http.DefaultClient (2 idle
// connections kept, the negative control) opens a new one for most calls.
package httpclient_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/wire"
)

const (
	connGoroutines      = 64
	connCyclesPerWorker = 20
)

// connsOpened runs the cycles through a Client built with opts and
// returns how many connections the server accepted.
func connsOpened(t *testing.T, opts ...httpclient.ClientOption) int64 {
	var opened atomic.Int64
	w := newWorldServer(t, httpapi.AllowAll{}, func(srv *http.Server) {
		srv.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				opened.Add(1)
			}
		}
	})
	c, err := httpclient.NewClient(w.srv.URL, append([]httpclient.ClientOption{httpclient.WithBearerToken(tokA)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range connGoroutines {
		wg.Go(func() {
			for i := range connCyclesPerWorker {
				is, err := c.Acquire(ctx, wire.AcquireRequest{Resource: fmt.Sprint("conns/", g), OperationID: "op", OperationClass: "test", RequestID: fmt.Sprint("r-", g, "-", i), TTLMs: 30_000})
				if err == nil {
					err = c.Release(ctx, is.Grant.Resource, is.Grant.Lease)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return opened.Load()
}

func TestDefaultClientReusesConnections(t *testing.T) {
	if n := connsOpened(t); n > 2*connGoroutines {
		t.Fatalf("%d connections opened for %d goroutines' %d calls, want at most two per goroutine", n, connGoroutines, 2*connGoroutines*connCyclesPerWorker)
	}
}

func TestDefaultTransportOpensConnectionsNegativeControl(t *testing.T) {
	if n := connsOpened(t, httpclient.WithHTTPClient(http.DefaultClient)); n <= 2*connGoroutines {
		t.Fatalf("http.DefaultClient opened only %d connections for %d goroutines: the control shows nothing", n, connGoroutines)
	} else {
		t.Logf("http.DefaultClient opened %d connections for %d calls", n, 2*connGoroutines*connCyclesPerWorker)
	}
}
