// Tests every /v1 endpoint over a real Registry on the memory store: the
// happy paths, and each registry error code arriving as its JSON code with
// its HTTP status.
package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

var bg = context.Background()

func acq(res, req string) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: res, OperationID: "op-" + req, OperationClass: "settle", RequestID: req}
}

// wantAPIError checks err is an *APIError with code and status.
func wantAPIError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var ae *httpclient.APIError
	if !errors.As(err, &ae) || ae.Status != status || ae.Code != code {
		t.Fatalf("err = %v, want %d %s", err, status, code)
	}
	if !errors.Is(err, &httpclient.APIError{Code: code}) {
		t.Fatalf("errors.Is by code %s fails on %v", code, err)
	}
}

func TestLeaseLifecycle(t *testing.T) {
	h := newHarness(t)
	a, err := h.alice.Acquire(bg, acq("inv/1", "r-1"))
	if err != nil {
		t.Fatal(err)
	}
	g := a.Grant
	// A fresh grant is its own HELD statement: one signed message.
	if g.Owner != "alice" || g.FenceToken != 1 || g.Resource != "inv/1" || !g.HeldStatement() || a.Status != nil {
		t.Fatalf("grant %+v status %+v", g, a.Status)
	}
	if !bytes.Equal(a.Grant.Encode(), g.Encode()) || a.GrantProof == "" || a.StatusProof != "" {
		t.Fatal("grant text is not the canonical bytes, or a proof is missing")
	}

	// A retry gets the same grant and a signed HELD status.
	again, err := h.alice.Acquire(bg, acq("inv/1", "r-1"))
	if err != nil || !bytes.Equal(again.Grant.Encode(), a.Grant.Encode()) || again.Status == nil || again.Status.State != grant.StateHeld {
		t.Fatalf("retried acquire: %v; same grant %v", err, err == nil && bytes.Equal(again.Grant.Encode(), a.Grant.Encode()))
	}
	q, err := h.alice.QueryRequest(bg, "r-1")
	if err != nil || !bytes.Equal(q.Grant.Encode(), a.Grant.Encode()) {
		t.Fatalf("query request: %v", err)
	}
	_, err = h.bob.QueryRequest(bg, "r-1") // request IDs are scoped to their owner
	wantAPIError(t, err, 404, "NOT_FOUND")

	_, err = h.bob.Acquire(bg, acq("inv/1", "r-b1"))
	wantAPIError(t, err, 409, "BUSY")

	h.clock.Advance(5 * time.Second)
	rn, err := h.alice.Renew(bg, "inv/1", g.Lease)
	if err != nil || rn.Status.State != grant.StateHeld || !rn.Status.IssuedAt.After(a.Grant.IssuedAt) {
		t.Fatalf("renew: %v", err)
	}
	_, err = h.bob.Renew(bg, "inv/1", g.Lease)
	wantAPIError(t, err, 403, "NOT_HOLDER")
	err = h.bob.Release(bg, "inv/1", g.Lease)
	wantAPIError(t, err, 403, "NOT_HOLDER")

	// A gate (any identity) asks about the grant by its canonical text.
	st, err := h.bob.Status(bg, a.Grant)
	if err != nil || st.Status.State != grant.StateHeld || st.Status.Grant != g.Digest() {
		t.Fatalf("status: %v", err)
	}

	if err := h.alice.Release(bg, "inv/1", g.Lease); err != nil {
		t.Fatal(err)
	}
	if err := h.alice.Release(bg, "inv/1", g.Lease); err != nil {
		t.Fatalf("release again: %v", err)
	}
	st, err = h.bob.Status(bg, a.Grant)
	if err != nil || st.Status.State != grant.StateReleased {
		t.Fatalf("status after release: %v %+v", err, st)
	}
	b, err := h.bob.Acquire(bg, acq("inv/1", "r-b2"))
	if err != nil || b.Grant.FenceToken <= g.FenceToken {
		t.Fatalf("bob after release: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	h := newHarness(t)
	a, err := h.alice.Acquire(bg, wire.AcquireRequest{Resource: "inv/2", OperationID: "op", OperationClass: "settle", RequestID: "r-1", TTLMs: 2000})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(3 * time.Second)
	_, err = h.alice.Renew(bg, "inv/2", a.Grant.Lease)
	wantAPIError(t, err, 410, "LEASE_EXPIRED")
	st, err := h.bob.Status(bg, a.Grant)
	if err != nil || st.Status.State != grant.StateExpired {
		t.Fatalf("status: %v", err)
	}
}

func TestInvalidRequests(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		name   string
		req    wire.AcquireRequest
		status int
		code   string
	}{
		{"resource not canonical", acq("Inv/1", "r-1"), 400, "INVALID"},
		{"bad request ID", acq("inv/1", "r 1"), 400, "INVALID"},
		{"ttl too short", wire.AcquireRequest{Resource: "inv/1", OperationID: "op", OperationClass: "settle", RequestID: "r-2", TTLMs: 1}, 400, "TTL_OUT_OF_RANGE"},
	} {
		_, err := h.alice.Acquire(bg, c.req)
		wantAPIError(t, err, c.status, c.code)
	}
	if _, err := h.alice.Acquire(bg, acq("inv/1", "r-3")); err != nil {
		t.Fatal(err)
	}
	other := acq("inv/1", "r-3")
	other.OperationID = "another-op"
	_, err := h.alice.Acquire(bg, other)
	wantAPIError(t, err, 409, "REQUEST_MISMATCH")

	// A grant the registry never issued, well-formed: NOT_FOUND.
	forged := &grant.Grant{
		Resource: "inv/1", Owner: "mallory", RequestID: "r-x", Lease: "lease-x",
		OperationRoot: grant.OperationRoot("inv/1", "op"), OperationClass: "settle",
		FenceToken: 99, BackendRevision: 1, IssuerEpoch: 1, TTLMs: 1000,
		IssuedAt: h.clock.Now(), ExpiresAt: h.clock.Now().Add(time.Second),
	}
	_, err = h.alice.Status(bg, forged)
	wantAPIError(t, err, 404, "NOT_FOUND")
}

func TestStoreUnavailable(t *testing.T) {
	h := newHarness(t)
	h.flaky.down.Store(true)
	status, eb, hdr := h.raw("POST", "/v1/acquire", tokAlice, `{"resource":"inv/1","operationId":"op","operationClass":"settle","requestId":"r-1"}`)
	if status != 503 || eb.Code != "UNAVAILABLE" || hdr.Get("Retry-After") == "" {
		t.Fatalf("got %d %+v", status, eb)
	}
	if status, _, _ := h.raw("GET", "/readyz", "", ""); status != 503 {
		t.Fatalf("readyz with the store down: %d", status)
	}
	h.flaky.down.Store(false)
	if status, _, _ := h.raw("GET", "/readyz", "", ""); status != 200 {
		t.Fatalf("readyz with the store up: %d", status)
	}
}

// TestWaiting covers waitMs: a waiter gets the lease on release, a second
// waiter beyond the limit is WAITERS_FULL, and a wait that runs out is
// WAIT_TIMEOUT.
func TestWaiting(t *testing.T) {
	h := newHarnessWith(t, func(c *registry.Config) { c.WaitersPerResourceMax = 1 })
	a, err := h.alice.Acquire(bg, acq("inv/3", "r-1"))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		is  wire.Issued
		err error
	}
	got := make(chan result, 1)
	go func() {
		req := acq("inv/3", "r-b1")
		req.WaitMs = 20_000
		is, err := h.bob.Acquire(bg, req)
		got <- result{is, err}
	}()
	h.waitFor(func() bool {
		ri, err := h.admin.Resource(bg, "inv/3")
		return err == nil && ri.Waiters == 1
	})
	carol := acq("inv/3", "r-c1")
	carol.WaitMs = 1000
	_, err = h.admin.Acquire(bg, carol)
	wantAPIError(t, err, 429, "WAITERS_FULL")

	if err := h.alice.Release(bg, "inv/3", a.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.is.Grant.Owner != "bob" || r.is.Grant.FenceToken != 2 {
		t.Fatalf("waiter: %v", r.err)
	}

	// Bob holds; Alice waits 1s of registry time, which then passes.
	go func() {
		req := acq("inv/3", "r-2")
		req.WaitMs = 1000
		is, err := h.alice.Acquire(bg, req)
		got <- result{is, err}
	}()
	h.waitFor(func() bool {
		ri, err := h.admin.Resource(bg, "inv/3")
		return err == nil && ri.Waiters == 1
	})
	h.clock.Advance(2 * time.Second)
	r = <-got
	wantAPIError(t, r.err, 409, "WAIT_TIMEOUT")
}

// waitFor polls cond (real time, bounded) without asserting any timing.
func (h *harness) waitFor(cond func() bool) {
	h.t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatal("condition never held")
}

func TestAdmin(t *testing.T) {
	h := newHarness(t)
	a, err := h.alice.Acquire(bg, acq("inv/4", "r-1"))
	if err != nil {
		t.Fatal(err)
	}
	ri, err := h.admin.SetPolicyGeneration(bg, "inv/4", 7)
	if err != nil || ri.PolicyGeneration != 7 {
		t.Fatalf("policy: %v %+v", err, ri)
	}
	ri, err = h.admin.RaiseFloor(bg, "inv/4", 100)
	if err != nil || ri.Floor != 100 || ri.HolderOwner != "alice" || ri.HolderLease != a.Grant.Lease {
		t.Fatalf("floor: %v %+v", err, ri)
	}
	if err := h.alice.Release(bg, "inv/4", a.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	b, err := h.bob.Acquire(bg, acq("inv/4", "r-b1"))
	if err != nil || b.Grant.FenceToken <= 100 || b.Grant.PolicyGeneration != 7 {
		t.Fatalf("after floor and policy: %v %+v", err, b)
	}
	_, err = h.admin.SetPolicyGeneration(bg, "inv/4", 3)
	wantAPIError(t, err, 400, "INVALID")

	line, err := h.admin.RevokeEpochsBelow(bg, 2)
	if err != nil || line != 2 {
		t.Fatalf("revoke: %v %d", err, line)
	}
	st, err := h.alice.Status(bg, b.Grant)
	if err != nil || st.Status.State != grant.StateRevoked || st.GrantProof != "" || st.StatusProof != "" {
		t.Fatalf("status of a revoked epoch's grant: %v %+v", err, st)
	}
	_, err = h.alice.Acquire(bg, acq("inv/5", "r-9"))
	wantAPIError(t, err, 403, "EPOCH_REVOKED")
}

// TestEveryRegistryCodeHasAStatus keeps codeStatus complete: a registry
// code without a deliberate status would fall to 500.
func TestEveryRegistryCodeHasAStatus(t *testing.T) {
	for _, e := range wire.RegistryErrors {
		wrapped := fmt.Errorf("context: %w", e)
		if _, ok := codeStatus[e.Code()]; !ok || codeOf(wrapped) != e.Code() {
			t.Errorf("code %s: no status, or not found through wrapping", e.Code())
		}
	}
	for err, want := range map[error]string{
		context.DeadlineExceeded: wire.CodeTimeout, context.Canceled: wire.CodeCanceled,
		errors.New("boom"): wire.CodeInternal, grant.ErrMalformed: "MALFORMED",
	} {
		if got := codeOf(err); got != want {
			t.Errorf("codeOf(%v) = %s, want %s", err, got, want)
		}
	}
}

// TestWaiterThatHangsUpLeavesTheQueue: a waiting acquire whose HTTP client
// goes away has its ticket withdrawn (the request context reaches the
// registry), so it blocks nobody behind it.
func TestWaiterThatHangsUpLeavesTheQueue(t *testing.T) {
	h := newHarness(t)
	if _, err := h.alice.Acquire(bg, acq("inv/6", "r-1")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		req := acq("inv/6", "r-b1")
		req.WaitMs = 20_000
		_, err := h.bob.Acquire(ctx, req)
		done <- err
	}()
	waiters := func(n int) func() bool {
		return func() bool {
			ri, err := h.admin.Resource(bg, "inv/6")
			return err == nil && ri.Waiters == n
		}
	}
	h.waitFor(waiters(1))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("hung-up waiter: %v", err)
	}
	h.waitFor(waiters(0))
	h.waitFor(func() bool { return value(t, h.metrics.waiters) == 0 })
}
