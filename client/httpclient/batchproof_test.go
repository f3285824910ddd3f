// This file proves the SDK carries a batch proof unchanged: a registry
// signing batch proofs (registry.Config.BatchGrantProofs) behind the real
// HTTP API, a client that verifies every answer, and the envelope each
// lease builds carries exactly the proof the registry signed, which a Go
// gate accepts.
package httpclient_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

func TestSDKCarriesBatchProofs(t *testing.T) {
	clk := clienttest.NewFakeClock()
	reg, err := clienttest.NewRegistry(clk, nil, func(c *registry.Config) { c.BatchGrantProofs = true })
	if err != nil {
		t.Fatal(err)
	}
	auth, err := httpapi.ParseTokenFile([]byte(tokA + " " + clienttest.OwnerA + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.NewServer(httpapi.Config{Registry: reg.Registry, Auth: auth, Authorizer: httpapi.AllowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	tr, err := httpclient.NewClient(srv.URL, httpclient.WithBearerToken(tokA), httpclient.WithVerifier(reg.Verifier))
	if err != nil {
		t.Fatal(err)
	}
	pol := &gate.Policy{Verifier: reg.Verifier}
	if err := pol.Check(); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess := client.NewSession(tr, client.Options{Clock: clk, Rand: rand.New(rand.NewPCG(uint64(i), 1)), Manual: true})
			r := wire.AcquireRequest{Resource: fmt.Sprintf("batch/%d", i), OperationID: "op", OperationClass: "settle", TTLMs: 10_000}
			l, err := sess.Acquire(context.Background(), r)
			if err != nil {
				t.Error(err)
				return
			}
			if !strings.HasPrefix(l.GrantProof(), "batch:") {
				t.Errorf("lease %d: proof %q is not a batch proof", i, l.GrantProof())
				return
			}
			m, err := l.Envelope(1, gatetest.Payload("x"))
			if err != nil {
				t.Error(err)
				return
			}
			if m.GrantProof != l.GrantProof() {
				t.Errorf("lease %d: the envelope carries %q, the registry signed %q", i, m.GrantProof, l.GrantProof())
			}
			if _, err := pol.Authenticate(&m, clienttest.OwnerA); err != nil {
				t.Errorf("lease %d: a Go gate refuses the envelope: %v", i, err)
			}
		}()
	}
	wg.Wait()
}
