// This file proves WithBatching keeps every call's contract over a real
// registry behind the real HTTP API: calls made while a request is in
// flight go as one POST /v1/batch and a lone call goes at once, alone;
// one operation's failure (BUSY with its holder, NOT_HOLDER, INVALID)
// reaches only its caller; a lost batch answer is each call's lost
// answer, and retrying with the same request IDs gives the very grants
// the lost answer carried (a fresh request ID, the negative control, is
// BUSY); a caller that gives up while queued is withdrawn; and against a
// server without /v1/batch the client falls back to single calls.
package httpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

// gated serves the real API and holds the first request it gets until
// release is closed, so that calls made meanwhile queue for a batch. It
// records each request's path (a batch with its operation count) and can
// lose the first batch's answer or act as a server without /v1/batch.
type gated struct {
	api      http.Handler
	held     atomic.Bool
	arrived  chan struct{} // closed when the first request is held
	release  chan struct{}
	mu       sync.Mutex
	paths    []string
	dropNext bool   // serve the next batch, keep its answer in lost, abort the connection
	lost     []byte // the answer of the batch whose answer was lost
	noBatch  bool   // answer /v1/batch 404, as a server from before it
}

func (g *gated) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.held.Swap(true) {
		close(g.arrived)
		<-g.release
	}
	if r.URL.Path != "/v1/batch" {
		g.note(r.URL.Path)
		g.api.ServeHTTP(w, r)
		return
	}
	body := new(bytes.Buffer)
	body.ReadFrom(r.Body)
	var br wire.BatchRequest
	json.Unmarshal(body.Bytes(), &br)
	g.note(fmt.Sprintf("/v1/batch:%d", len(br.Operations)))
	r.Body = http.NoBody
	r2 := r.Clone(r.Context())
	r2.Body = nopCloser{bytes.NewReader(body.Bytes())}
	g.mu.Lock()
	noBatch, drop := g.noBatch, g.dropNext
	g.dropNext = false
	g.mu.Unlock()
	switch {
	case noBatch:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"code":"NOT_FOUND","message":"httpapi: no endpoint /v1/batch"}`))
	case drop:
		rec := httptest.NewRecorder()
		g.api.ServeHTTP(rec, r2)
		g.mu.Lock()
		g.lost = rec.Body.Bytes()
		g.mu.Unlock()
		panic(http.ErrAbortHandler) // applied, answer lost
	default:
		g.api.ServeHTTP(w, r2)
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func (g *gated) note(p string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paths = append(g.paths, p)
}

func (g *gated) seen() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.paths...)
}

// rearm makes the next request the held one again.
func (g *gated) rearm() {
	g.arrived, g.release = make(chan struct{}), make(chan struct{})
	g.held.Store(false)
	g.mu.Lock()
	g.paths = nil
	g.mu.Unlock()
}

type batchWorld struct {
	env *clienttest.Env
	g   *gated
	srv *httptest.Server
}

func newBatchWorld(t *testing.T) *batchWorld {
	env := clienttest.NewEnv(t, nil)
	auth, err := httpapi.ParseTokenFile([]byte(tokA + " " + clienttest.OwnerA + "\n" + tokB + " " + clienttest.OwnerB + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.NewServer(httpapi.Config{Registry: env.Reg.Registry, Auth: auth, Authorizer: httpapi.AllowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	g := &gated{api: s}
	g.rearm()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return &batchWorld{env: env, g: g, srv: srv}
}

func (w *batchWorld) client(t *testing.T, token string, opts ...httpclient.ClientOption) *httpclient.Client {
	c, err := httpclient.NewClient(w.srv.URL, append([]httpclient.ClientOption{httpclient.WithBearerToken(token),
		httpclient.WithVerifier(w.env.Reg.Verifier), httpclient.WithHTTPClient(httpclient.NewHTTPClient(nil))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// coalesce runs first (held at the server), then each of rest once all
// of them are queued behind it, releases the server and returns every
// call's error, first's last.
func (w *batchWorld) coalesce(t *testing.T, c *httpclient.Client, first func() error, rest ...func() error) []error {
	t.Helper()
	errs := make([]error, len(rest)+1)
	var wg sync.WaitGroup
	wg.Go(func() { errs[len(rest)] = first() })
	<-w.g.arrived
	for i, f := range rest {
		wg.Go(func() { errs[i] = f() })
	}
	for deadline := time.Now().Add(10 * time.Second); httpclient.QueuedCalls(c) < len(rest); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls queued", httpclient.QueuedCalls(c), len(rest))
		}
	}
	close(w.g.release)
	wg.Wait()
	return errs
}

func acquireReq(resource, requestID string) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: resource, OperationID: "op-" + requestID, OperationClass: "settle", RequestID: requestID}
}

// oneInFlight is the coalescing whose shape the tests below pin: one
// request in flight, every other call queued behind it.
var oneInFlight = httpclient.BatchOptions{InflightMax: 1}

// By default a second call goes alone, and is answered, while the first
// is in flight (InflightMaxDefault). Negative control: with one slot the
// second call queues behind the first.
func TestBatchingDefaultKeepsTwoRequestsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opt        httpclient.BatchOptions
		secondGoes bool
	}{{"default", httpclient.BatchOptions{}, true}, {"one slot", oneInFlight, false}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newBatchWorld(t)
			c := w.client(t, tokA, httpclient.WithBatching(tc.opt))
			ctx := context.Background()
			var wg sync.WaitGroup
			var firstErr error
			wg.Go(func() { _, firstErr = c.Acquire(ctx, acquireReq("res/0", "r-0")) })
			<-w.g.arrived  // held at the server
			defer func() { // also when the test fails below
				select {
				case <-w.g.release:
				default:
					close(w.g.release)
				}
			}()
			second := make(chan error, 1)
			wg.Go(func() { _, err := c.Acquire(ctx, acquireReq("res/1", "r-1")); second <- err })
			if tc.secondGoes {
				select {
				case err := <-second:
					if err != nil {
						t.Fatalf("second call: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("the second call is not answered while the first is held (queued: %d)", httpclient.QueuedCalls(c))
				}
				// The held request is noted once released.
				if got := fmt.Sprint(w.g.seen()); got != "[/v1/acquire]" {
					t.Fatalf("requests %s, want the second call sent alone and answered while the first is held", got)
				}
			} else {
				for deadline := time.Now().Add(10 * time.Second); httpclient.QueuedCalls(c) < 1; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the second call neither queued nor went")
					}
				}
			}
			close(w.g.release)
			wg.Wait()
			if firstErr != nil {
				t.Fatalf("first call: %v", firstErr)
			}
			if !tc.secondGoes {
				if err := <-second; err != nil {
					t.Fatalf("second call: %v", err)
				}
			}
		})
	}
}

func TestBatchingCoalescesWhileARequestIsInFlight(t *testing.T) {
	w := newBatchWorld(t)
	c := w.client(t, tokA, httpclient.WithBatching(oneInFlight))
	ctx := context.Background()
	grants := make([]wire.Issued, 6)
	calls := make([]func() error, 5)
	for i := range calls {
		calls[i] = func() (err error) {
			grants[i+1], err = c.Acquire(ctx, acquireReq(fmt.Sprint("res/", i+1), fmt.Sprint("r-", i+1)))
			return err
		}
	}
	errs := w.coalesce(t, c, func() (err error) { grants[0], err = c.Acquire(ctx, acquireReq("res/0", "r-0")); return err }, calls...)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	for i, is := range grants {
		if is.Grant.Resource != fmt.Sprint("res/", i) || is.Grant.FenceToken == 0 || is.Status != nil || is.Grant.HeldUntil.IsZero() || is.GrantProof == "" {
			t.Fatalf("grant %d: %+v", i, is.Grant)
		}
	}
	if got := fmt.Sprint(w.g.seen()); got != "[/v1/acquire /v1/batch:5]" {
		t.Fatalf("requests %s, want the held call alone and the five queued behind it in one batch", got)
	}
	// Idle, a call goes at once, alone, to its own endpoint.
	w.g.mu.Lock()
	w.g.paths = nil
	w.g.mu.Unlock()
	if err := c.Release(ctx, "res/1", grants[1].Grant.Lease); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(w.g.seen()); got != "[/v1/release]" {
		t.Fatalf("a lone call went as %s", got)
	}
}

func TestBatchOneFailureLeavesOthersIntact(t *testing.T) {
	w := newBatchWorld(t)
	ctx := context.Background()
	bob := w.client(t, tokB)
	w.g.held.Store(true) // bob's acquire is not the one to hold
	held, err := bob.Acquire(ctx, acquireReq("res/held", "b-1"))
	if err != nil {
		t.Fatal(err)
	}
	w.g.rearm()
	c := w.client(t, tokA, httpclient.WithBatching(oneInFlight))
	var (
		ok, status wire.Issued
		errBusy    error
	)
	errs := w.coalesce(t, c, func() error { _, err := c.Acquire(ctx, acquireReq("res/0", "a-0")); return err },
		func() (err error) { ok, err = c.Acquire(ctx, acquireReq("res/1", "a-1")); return err },
		func() error { _, errBusy = c.Acquire(ctx, acquireReq("res/held", "a-2")); return nil },
		func() error { return c.Release(ctx, "res/held", held.Grant.Lease) },
		func() (err error) { status, err = c.Status(ctx, held.Grant); return err },
		func() error { _, err := c.Acquire(ctx, acquireReq("Res/Not-Canonical", "a-3")); return err },
	)
	if got := fmt.Sprint(w.g.seen()); got != "[/v1/acquire /v1/batch:5]" {
		t.Fatalf("requests %s, want one batch of five", got)
	}
	if errs[5] != nil || errs[0] != nil || ok.Grant == nil || ok.Grant.Resource != "res/1" {
		t.Fatalf("the held call %v, the good acquire %v", errs[5], errs[0])
	}
	var be *wire.BusyError
	if !errors.Is(errBusy, wire.ErrBusy) || !errors.As(errBusy, &be) || be.Holder == nil || be.Holder.Owner != clienttest.OwnerB {
		t.Fatalf("acquire of a held resource: %v, want BUSY naming %s", errBusy, clienttest.OwnerB)
	}
	if !errors.Is(errs[2], wire.ErrNotHolder) {
		t.Fatalf("release of another's lease: %v, want NOT_HOLDER", errs[2])
	}
	if errs[3] != nil || status.Status.State != grant.StateHeld || status.Status.Grant != held.Grant.Digest() {
		t.Fatalf("status in the batch: %v %+v", errs[3], status.Status)
	}
	if !errors.Is(errs[4], wire.ErrInvalid) {
		t.Fatalf("a bad resource name: %v, want INVALID", errs[4])
	}
}

func TestBatchLostAnswerRetriedGivesSameGrants(t *testing.T) {
	w := newBatchWorld(t)
	ctx := context.Background()
	c := w.client(t, tokA, httpclient.WithBatching(oneInFlight))
	w.g.mu.Lock()
	w.g.dropNext = true
	w.g.mu.Unlock()
	acquireAll := func(into []wire.Issued) []func() error {
		var fs []func() error
		for i := range into {
			fs = append(fs, func() (err error) {
				into[i], err = c.Acquire(ctx, acquireReq(fmt.Sprint("res/", i+1), fmt.Sprint("r-", i+1)))
				return err
			})
		}
		return fs
	}
	first := func() error { _, err := c.Acquire(ctx, acquireReq("res/0", "r-0")); return err }
	errs := w.coalesce(t, c, first, acquireAll(make([]wire.Issued, 4))...)
	for i, err := range errs[:4] {
		if !errors.Is(err, client.ErrOutcomeUnknown) {
			t.Fatalf("call %d of the lost batch: %v, want ErrOutcomeUnknown", i, err)
		}
	}
	w.g.mu.Lock()
	lostBody := w.g.lost
	w.g.mu.Unlock()
	var lost wire.BatchResponse
	if err := json.Unmarshal(lostBody, &lost); err != nil || len(lost.Answers) != 4 {
		t.Fatalf("the lost answer %q: %v", lostBody, err)
	}
	// Retried with the same request IDs, batched again: the same grants.
	w.g.rearm()
	again := make([]wire.Issued, 4)
	errs = w.coalesce(t, c, first, acquireAll(again)...)
	if got := fmt.Sprint(w.g.seen()); got != "[/v1/acquire /v1/batch:4]" {
		t.Fatalf("retry went as %s", got)
	}
	lostGrants := map[string]string{} // resource → the lost grant's text; the batch's order is the queue's
	for i, a := range lost.Answers {
		var was wire.IssuedResponse
		if err := json.Unmarshal(a.Answer, &was); a.Status != http.StatusOK || err != nil {
			t.Fatalf("lost answer %d: %d %v", i, a.Status, err)
		}
		g, err := grant.ParseGrant([]byte(was.Grant))
		if err != nil {
			t.Fatal(err)
		}
		lostGrants[g.Resource] = was.Grant
	}
	for i, is := range again {
		if errs[i] != nil || string(is.Grant.Encode()) != lostGrants[is.Grant.Resource] {
			t.Fatalf("retry %d: %v; a grant other than the lost one: %v", i, errs[i], errs[i] == nil)
		}
	}
	// The negative control: a fresh request ID instead of the same one
	// is a second acquire, refused, since the lost grant holds the lease.
	if _, err := c.Acquire(ctx, acquireReq("res/1", "r-fresh")); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("a fresh request ID after a lost grant: %v, want BUSY", err)
	}
}

func TestBatchCallerThatGivesUpIsWithdrawn(t *testing.T) {
	w := newBatchWorld(t)
	ctx := context.Background()
	c := w.client(t, tokA, httpclient.WithBatching(oneInFlight))
	gone, cancel := context.WithCancel(ctx)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = c.Acquire(ctx, acquireReq("res/0", "r-0")) })
	<-w.g.arrived
	for i := 1; i <= 3; i++ {
		wg.Go(func() {
			cctx := ctx
			if i == 3 {
				cctx = gone
			}
			_, errs[i] = c.Acquire(cctx, acquireReq(fmt.Sprint("res/", i), fmt.Sprint("r-", i)))
		})
	}
	waitQueued := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); httpclient.QueuedCalls(c) != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d calls queued, want %d", httpclient.QueuedCalls(c), n)
			}
		}
	}
	waitQueued(3)
	cancel()
	waitQueued(2)
	close(w.g.release)
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || !errors.Is(errs[3], context.Canceled) {
		t.Fatalf("calls %v", errs)
	}
	if got := fmt.Sprint(w.g.seen()); got != "[/v1/acquire /v1/batch:2]" {
		t.Fatalf("requests %s: the withdrawn call was sent", got)
	}
	if _, err := c.Acquire(ctx, acquireReq("res/3", "r-4")); err != nil {
		t.Fatalf("the withdrawn acquire was applied: %v", err)
	}
}

func TestBatchingFallsBackOnAnOlderServer(t *testing.T) {
	w := newBatchWorld(t)
	w.g.mu.Lock()
	w.g.noBatch = true
	w.g.mu.Unlock()
	ctx := context.Background()
	c := w.client(t, tokA, httpclient.WithBatching(oneInFlight))
	calls := func(from int) []func() error {
		var fs []func() error
		for i := from; i < from+3; i++ {
			fs = append(fs, func() error {
				_, err := c.Acquire(ctx, acquireReq(fmt.Sprint("res/", i), fmt.Sprint("r-", i)))
				return err
			})
		}
		return fs
	}
	first := func() error { _, err := c.Acquire(ctx, acquireReq("res/0", "r-0")); return err }
	for _, err := range w.coalesce(t, c, first, calls(1)...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(w.g.seen()); got != "[/v1/acquire /v1/batch:3 /v1/acquire /v1/acquire /v1/acquire]" {
		t.Fatalf("requests %s, want the batch refused then each call alone", got)
	}
	w.g.rearm()
	var wg sync.WaitGroup
	wg.Go(func() { first() })
	<-w.g.arrived
	for _, f := range calls(4) {
		wg.Go(func() {
			if err := f(); err != nil {
				t.Error(err)
			}
		})
	}
	close(w.g.release)
	wg.Wait()
	for _, p := range w.g.seen() {
		if p != "/v1/acquire" {
			t.Fatalf("after a 404 the client still sent %s", p)
		}
	}
}
