// This file proves the HTTP transport keeps the client's contract over a
// real registry behind the real HTTP API: the happy path; a lost acquire
// answer recovered under the same request ID; registry refusals that stay
// errors.Is-able; transport refusals final, the resource policy's too;
// and a dead server "lost".
package httpclient_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

const (
	tokA = "token-a-0123456789abcdef"
	tokB = "token-b-0123456789abcdef"
)

type world struct {
	env *clienttest.Env
	srv *httptest.Server
}

func newWorld(t *testing.T) *world { return newWorldWith(t, httpapi.AllowAll{}) }

// newWorldWith serves the registry under the resource policy authz.
func newWorldWith(t *testing.T, authz httpapi.Authorizer) *world {
	return newWorldServer(t, authz, nil)
}

// newWorldServer is newWorldWith with setup applied to the HTTP server
// before it starts (hooks set on a running server race its connections).
func newWorldServer(t *testing.T, authz httpapi.Authorizer, setup func(*http.Server)) *world {
	env := clienttest.NewEnv(t, nil)
	auth, err := httpapi.ParseTokenFile([]byte(tokA + " " + clienttest.OwnerA + "\n" + tokB + " " + clienttest.OwnerB + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.NewServer(httpapi.Config{Registry: env.Reg.Registry, Auth: auth, Authorizer: authz})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	if setup != nil {
		setup(srv.Config)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return &world{env: env, srv: srv}
}

func (w *world) transport(t *testing.T, token string) *httpclient.Client {
	c, err := httpclient.NewClient(w.srv.URL, httpclient.WithBearerToken(token), httpclient.WithVerifier(w.env.Reg.Verifier))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (w *world) session(t *testing.T, tr client.Transport, seed uint64) *client.Session {
	return client.NewSession(tr, client.Options{Clock: w.env.Clock, Rand: rand.New(rand.NewPCG(seed, seed)), Manual: true})
}

func TestHTTPHappyPathAndLostAcquireAnswer(t *testing.T) {
	w := newWorld(t)
	net := &clienttest.Lossy{Inner: w.transport(t, tokA)}
	first := true
	net.Fault = func(op, _ string) clienttest.Fault {
		if op == "Acquire" && first {
			first = false
			return clienttest.DropResponse
		}
		return clienttest.Pass
	}
	s := w.session(t, net, 1)
	ww := &clienttest.Worker{Net: net, S: s}
	l, err := w.env.Acquire(context.Background(), ww, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	if ids := net.RequestIDs(); len(ids) != 1 || l.Grant().RequestID != ids[0] {
		t.Fatalf("request IDs %q, grant %s", ids, l.Grant().RequestID)
	}
	w.env.TickUntil(l, 250*time.Millisecond, func() bool { return len(net.CallsOf("Renew")) >= 2 })
	if l.State() != client.StateHeld {
		t.Fatalf("after renewals over HTTP: %s", l.State())
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); err != nil {
		t.Fatal(err)
	}
	l.Settle(1, gate.Accepted) // never sent
	if err := l.Release(context.Background()); err != nil || l.State() != client.StateReleased {
		t.Fatalf("release: %v, %s", err, l.State())
	}
}

func TestHTTPRefusalsAndLoss(t *testing.T) {
	w := newWorld(t)
	a := w.session(t, w.transport(t, tokA), 2)
	b := w.session(t, w.transport(t, tokB), 3)
	ctx := context.Background()
	if _, err := a.Acquire(ctx, clienttest.Request("op-a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, clienttest.Request("op-b")); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("busy over HTTP: %v, want wire.ErrBusy", err)
	}
	bad := w.session(t, w.transport(t, "token-x-0123456789abcdef"), 4)
	if _, err := bad.Acquire(ctx, clienttest.Request("op-x")); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("unknown token: %v, want ErrRefused", err)
	}
	if _, ok := bad.Pending(clienttest.Resource); ok {
		t.Fatal("a refused acquire kept its request ID")
	}
	// A dead server: every answer is lost, the request ID is kept.
	w.srv.Close()
	dead := w.session(t, w.transport(t, tokB), 5)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond) // real time: the dead server refuses connections at once
	defer cancel()
	_, err := dead.Acquire(cctx, clienttest.Request("op-d"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire against a dead server: %v, want it to keep retrying until ctx ends", err)
	}
	if _, ok := dead.Pending(clienttest.Resource); !ok {
		t.Fatalf("lost answers must keep the request ID (err %v)", err)
	}
}

// TestPolicyRefusalIsFinal: an acquire the resource policy refuses is a
// definite refusal, not a lost answer to retry under its request ID.
func TestPolicyRefusalIsFinal(t *testing.T) {
	policy, err := httpapi.ParsePolicy([]byte(`{"schema": "resourcePolicy.v1", "rules": [
	  {"identities": ["` + clienttest.OwnerA + `"], "resources": ["*"], "verbs": ["acquire"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorldWith(t, policy)
	b := w.session(t, w.transport(t, tokB), 6)
	_, err = b.Acquire(context.Background(), clienttest.Request("op-b"))
	if !errors.Is(err, client.ErrRefused) || !errors.Is(err, &httpclient.APIError{Code: wire.CodeForbiddenResource}) {
		t.Fatalf("acquire outside the policy: %v, want ErrRefused with FORBIDDEN_RESOURCE", err)
	}
	if _, ok := b.Pending(clienttest.Resource); ok {
		t.Fatal("a refused acquire kept its request ID")
	}
}
