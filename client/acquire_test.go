// This file proves acquire never runs two identities: while the registry
// cannot answer, the request ID is kept until TTL + margin passed; a grant
// that ended unseen draws a new ID only then; concurrent acquires of one
// resource never put two request IDs in flight or hold two grants. (The
// lost-response recovery is in clienttest.RunScenarios.)
package client_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

func TestUnreachableRegistryKeepsRequestIDUntilTTLPlusMargin(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 11, true)
	w.Net.Fault = func(op, _ string) clienttest.Fault {
		if op == "Acquire" {
			return clienttest.DropResponse // the first one is granted; no answer ever arrives
		}
		return clienttest.DropRequest
	}
	ctx, cancel := context.WithCancel(f.Ctx)
	go func() { // give up after 5s of fake time
		for f.Clock.Now().Before(clienttest.T0.Add(5 * time.Second)) {
			time.Sleep(100 * time.Microsecond)
		}
		cancel()
	}()
	if _, err := f.Acquire(ctx, w, clienttest.Request("op-1")); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire against an unreachable registry: %v", err)
	}
	id, ok := w.S.Pending(clienttest.Resource)
	if ids := w.Net.RequestIDs(); !ok || len(ids) != 1 || ids[0] != id {
		t.Fatalf("pending %q %v, IDs used %q: want one ID, still pending", id, ok, ids)
	}
	// Another operation may not start a second identity yet.
	var pe *client.PendingError
	if _, err := w.S.Acquire(f.Ctx, clienttest.Request("op-2")); !errors.As(err, &pe) || pe.RequestID != id {
		t.Fatalf("other acquire while pending: %v, want *PendingError for %s", err, id)
	}
	// The same operation retries under the same ID; the registry is back
	// and still holds that grant: it is recovered, not duplicated.
	w.Net.Fault = nil
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Grant().RequestID != id || w.Net.MaxDifferentInFlight() != 1 {
		t.Fatalf("grant request %s, want %s; max IDs in flight %d", l.Grant().RequestID, id, w.Net.MaxDifferentInFlight())
	}
}

func TestNewRequestIDOnlyAfterOldAttemptPresumedOver(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 12, true)
	ctx, cancel := context.WithCancel(f.Ctx)
	w.Net.Fault = func(op, _ string) clienttest.Fault {
		if op == "Acquire" {
			return clienttest.DropResponse // granted, answer lost
		}
		cancel() // the recovery query is lost too, and the caller gives up
		return clienttest.DropRequest
	}
	if _, err := f.Acquire(ctx, w, clienttest.Request("op-1")); err == nil {
		t.Fatal("acquire succeeded with every answer lost")
	}
	old, _ := w.S.Pending(clienttest.Resource)
	// Still unreachable; another operation waits out TTL + AcquireMargin
	// from the last send.
	var pe *client.PendingError
	if _, err := w.S.Acquire(f.Ctx, clienttest.Request("op-2")); !errors.As(err, &pe) || pe.RequestID != old {
		t.Fatalf("other operation while pending: %v, want *PendingError", err)
	}
	f.Clock.Advance(pe.ReusableAt.Sub(f.Clock.Now()) - time.Millisecond)
	if _, err := w.S.Acquire(f.Ctx, clienttest.Request("op-2")); !errors.Is(err, client.ErrAcquirePending) {
		t.Fatalf("just before TTL + margin: %v, want ErrAcquirePending", err)
	}
	f.Clock.Advance(time.Millisecond)
	w.Net.Fault = nil
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-2"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Grant().RequestID == old {
		t.Fatal("a new operation reused the old request ID")
	}
	// The old grant was over (expired at the registry) before the new ID
	// was first sent: never two identities at once.
	oldIs, err := f.Reg.QueryRequest(f.Ctx, clienttest.OwnerA, old)
	if err != nil {
		t.Fatal(err)
	}
	if oldIs.Status.State == grant.StateHeld || !oldIs.Grant.ExpiresAt.Before(l.Grant().IssuedAt) {
		t.Fatalf("old grant %s expiring %s overlaps new grant issued %s", oldIs.Status.State, oldIs.Grant.ExpiresAt, l.Grant().IssuedAt)
	}
	if l.Grant().FenceToken <= oldIs.Grant.FenceToken {
		t.Fatalf("new fence %d not above old %d", l.Grant().FenceToken, oldIs.Grant.FenceToken)
	}
}

func TestLostAnswerOfGrantThatEndedDrawsNewID(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	// The outage is longer than the default AcquireLostMax allows; this
	// test is about the ID drawn after it, so the acquire keeps trying.
	f.Tune = func(o *client.Options) { o.AcquireLostMax = 1000 }
	w := f.Worker(clienttest.OwnerA, 13, true)
	var down atomic.Bool
	down.Store(true)
	acquires := 0
	w.Net.Fault = func(op, _ string) clienttest.Fault {
		if op == "Acquire" {
			acquires++
		}
		switch {
		case op == "Acquire" && acquires == 1:
			return clienttest.DropResponse // granted, answer lost
		case down.Load():
			return clienttest.DropRequest
		}
		return clienttest.Pass
	}
	go func() { // the outage outlasts the lost grant's TTL and lock-delay
		for f.Clock.Now().Before(clienttest.T0.Add(clienttest.TTL + 3*time.Second)) {
			time.Sleep(100 * time.Microsecond)
		}
		down.Store(false)
	}()
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	ids := w.Net.RequestIDs()
	if len(ids) != 2 || l.Grant().RequestID != ids[1] || l.Grant().FenceToken != 2 {
		t.Fatalf("IDs %q, grant %s fence %d: want the ended first grant, then a second ID", ids, l.Grant().RequestID, l.Grant().FenceToken)
	}
	if w.Net.MaxDifferentInFlight() != 1 {
		t.Fatalf("%d request IDs in flight at once", w.Net.MaxDifferentInFlight())
	}
}

func TestConcurrentAcquiresNeverTwoIdentities(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 14, true)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var leases []*client.Lease
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := clienttest.Request("op-1")
			if i%2 == 1 {
				r.OperationID = "op-2"
			}
			l, err := w.S.Acquire(f.Ctx, r)
			if err == nil {
				mu.Lock()
				leases = append(leases, l)
				mu.Unlock()
				return
			}
			if !errors.Is(err, client.ErrAlreadyHeld) && !errors.Is(err, client.ErrAcquirePending) {
				t.Errorf("acquire %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if len(leases) != 1 || w.Net.MaxDifferentInFlight() != 1 {
		t.Fatalf("%d leases, %d IDs in flight at once: want 1 and 1", len(leases), w.Net.MaxDifferentInFlight())
	}
}

func TestDefiniteRefusalIsFinal(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	a, b := f.Worker(clienttest.OwnerA, 15, true), f.Worker(clienttest.OwnerB, 16, true)
	if _, err := f.Acquire(f.Ctx, a, clienttest.Request("op-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Acquire(f.Ctx, b, clienttest.Request("op-2")); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("second owner: %v, want wire.ErrBusy", err)
	}
	if _, ok := b.S.Pending(clienttest.Resource); ok {
		t.Fatal("a refused request ID is still pending")
	}
}

// TestDefaultTTLIsSentAndWaitedOut: an acquire that names no TTL sends
// Options.TTLDefault, so after a lost answer the old attempt is presumed
// over after exactly that TTL + margin, not the registry's largest TTL.
func TestDefaultTTLIsSentAndWaitedOut(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 13, true)
	ctx, cancel := context.WithCancel(f.Ctx)
	w.Net.Fault = func(op, _ string) clienttest.Fault {
		if op == "Acquire" {
			return clienttest.DropResponse
		}
		cancel()
		return clienttest.DropRequest
	}
	r := clienttest.Request("op-1")
	r.TTLMs = 0
	sent := f.Clock.Now()
	if _, err := f.Acquire(ctx, w, r); err == nil {
		t.Fatal("acquire succeeded with every answer lost")
	}
	id, _ := w.S.Pending(clienttest.Resource)
	is, err := f.Reg.QueryRequest(f.Ctx, clienttest.OwnerA, id)
	if err != nil {
		t.Fatal(err)
	}
	o := w.S.Options()
	if got := time.Duration(is.Grant.TTLMs) * time.Millisecond; got != o.TTLDefault {
		t.Fatalf("granted TTL %s, want the client's default %s sent explicitly", got, o.TTLDefault)
	}
	var pe *client.PendingError
	r2 := clienttest.Request("op-2")
	if _, err := w.S.Acquire(f.Ctx, r2); !errors.As(err, &pe) {
		t.Fatalf("other operation while pending: %v, want *PendingError", err)
	}
	if limit := sent.Add(o.TTLDefault + o.AcquireMargin + time.Second); pe.ReusableAt.After(limit) {
		t.Fatalf("old attempt presumed over only at %s, want by %s (TTLDefault + margin)", pe.ReusableAt, limit)
	}
}
