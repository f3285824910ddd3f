// This file proves the registry's lease lifecycle over the memory store with
// a fake clock: fences strictly increase, release frees at once, expiry is
// judged only by the registry clock and is followed by lock-delay, and a
// retried request ID returns the same grant, never a second one.
package registry_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

func TestAcquireReleaseFencesIncrease(t *testing.T) {
	e := newEnv(t, nil)
	var last uint64
	for i, id := range []string{"r1", "r2", "r3"} {
		is := e.mustAcquire("worker-a", req("inv/1", id))
		if is.Grant.FenceToken <= last {
			t.Fatalf("grant %d: fence %d not above %d", i, is.Grant.FenceToken, last)
		}
		last = is.Grant.FenceToken
		if is.Status != nil || !is.Grant.HeldStatement() {
			t.Fatalf("a fresh grant must be its own HELD statement, without a status: %+v", is.Status)
		}
		if err := e.reg.Release(e.ctx, "worker-a", "inv/1", is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		// Idempotent: the retry of a release whose response was lost.
		if err := e.reg.Release(e.ctx, "worker-a", "inv/1", is.Grant.Lease); err != nil {
			t.Fatalf("second release: %v", err)
		}
		st, err := e.reg.Status(e.ctx, is.Grant)
		if err != nil || st.Status.State != grant.StateReleased {
			t.Fatalf("status after release: %v %v", st.Status, err)
		}
	}
}

func TestBusyAndExpiryWithLockDelay(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1"))
	if _, err := e.reg.Acquire(e.ctx, "worker-b", req("inv/1", "b1")); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("want busy, got %v", err)
	}
	e.clock.Advance(10 * time.Second) // expiresAt <= now: expired
	if _, err := e.reg.Renew(e.ctx, "worker-a", "inv/1", a.Grant.Lease); !errors.Is(err, wire.ErrLeaseExpired) {
		t.Fatalf("renew after expiry: %v", err)
	}
	if _, err := e.reg.Acquire(e.ctx, "worker-b", req("inv/1", "b2")); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("want busy during lock-delay, got %v", err)
	}
	e.clock.Advance(time.Duration(e.reg.Config().LockDelayMs) * time.Millisecond)
	b := e.mustAcquire("worker-b", req("inv/1", "b3"))
	if b.Grant.FenceToken != a.Grant.FenceToken+1 {
		t.Fatalf("fence %d after %d", b.Grant.FenceToken, a.Grant.FenceToken)
	}
	st, err := e.reg.Status(e.ctx, a.Grant)
	if err != nil || st.Status.State != grant.StateExpired {
		t.Fatalf("old grant: %v %v", st.Status, err)
	}
}

func TestRenewExtendsFromRegistryClock(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1"))
	e.clock.Advance(9 * time.Second)
	r, err := e.reg.Renew(e.ctx, "worker-a", "inv/1", a.Grant.Lease)
	if err != nil {
		t.Fatal(err)
	}
	e.checkProofs(r)
	if r.Grant.Digest() != a.Grant.Digest() {
		t.Fatal("renew changed the grant")
	}
	e.clock.Advance(9 * time.Second) // 18s after issue, 9s after renewal: still held
	st, err := e.reg.Status(e.ctx, a.Grant)
	if err != nil || st.Status.State != grant.StateHeld {
		t.Fatalf("after renewal: %v %v", st.Status, err)
	}
	skew := time.Duration(e.reg.Config().ClockSkewMaxMs) * time.Millisecond
	if exp := e.clock.Now().Add(time.Second); st.Status.ValidUntil.After(exp.Add(-skew)) {
		t.Fatalf("validUntil %s passes expiry %s minus skew", st.Status.ValidUntil, exp)
	}
}

func TestWaiterServedAfterExpiryPlusLockDelay(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1"))
	type result struct {
		is  wire.Issued
		err error
	}
	done := make(chan result, 1)
	go func() {
		w := req("inv/1", "b1")
		w.WaitMs = 30_000
		is, err := e.reg.Acquire(e.ctx, "worker-b", w)
		done <- result{is, err}
	}()
	waitWaiters(t, e, "inv/1", 1)
	e.clock.Advance(10 * time.Second) // the lease expires; lock-delay starts
	time.Sleep(20 * time.Millisecond) // several polls (a pass here proves nothing; a failure would)
	select {
	case r := <-done:
		t.Fatalf("granted inside lock-delay: %+v %v", r.is.Grant, r.err)
	default:
	}
	e.clock.Advance(time.Duration(e.reg.Config().LockDelayMs) * time.Millisecond)
	r := <-done
	if r.err != nil || r.is.Grant.FenceToken != a.Grant.FenceToken+1 {
		t.Fatalf("waiter: %v %v", r.is.Grant, r.err)
	}
	e.checkProofs(r.is)
}
