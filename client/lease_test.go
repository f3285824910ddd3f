// This file proves the lease shell against a real registry on a fake clock
// and a lossy network: the happy path with renewals and release, UNKNOWN
// becoming EXPIRED only on the registry's word, a stale status proof, and
// the background loop cancelling Ctx on a lost renewal. (The lost-renewal
// and pause scenarios are in clienttest.RunScenarios.)
package client_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestHappyPathRenewsAndReleases(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 1, true)
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	if l.State() != client.StateHeld || l.Ctx().Err() != nil {
		t.Fatalf("after acquire: %s, ctx %v", l.State(), l.Ctx().Err())
	}
	ctx := l.Ctx()
	// Run for three TTLs: renewals and proof refreshes keep it HELD.
	end := f.Clock.Now().Add(3 * clienttest.TTL)
	f.TickUntil(l, 250*time.Millisecond, func() bool { return !f.Clock.Now().Before(end) })
	if l.State() != client.StateHeld || ctx.Err() != nil {
		t.Fatalf("after 3 TTLs: %s, ctx %v", l.State(), ctx.Err())
	}
	if n := len(w.Net.CallsOf("Renew")); n < 6 {
		t.Fatalf("%d renewals in 3 TTLs, want at least 6 (every TTL/3 ± jitter)", n)
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); err != nil {
		t.Fatalf("envelope while held: %v", err)
	}
	l.Settle(1, gate.Accepted) // never sent: nothing for Release to drain
	if err := l.Release(f.Ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed after release")
	}
	if ctx.Err() == nil || l.State() != client.StateReleased {
		t.Fatalf("after release: %s, ctx %v", l.State(), ctx.Err())
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); !errors.Is(err, client.ErrNotCertain) {
		t.Fatalf("envelope after release: %v, want ErrNotCertain", err)
	}
	want := []string{"REQUESTED -AcquireOK-> HELD", "HELD -ReleaseOK-> RELEASED"}
	if got := clienttest.Compact(w.Rec.Lines()); !slices.Equal(got, want) {
		t.Fatalf("transitions %q, want %q", got, want)
	}
}

func TestUnknownBecomesExpiredOnlyWhenRegistryConfirms(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 3, true)
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	w.Net.Fault = func(string, string) clienttest.Fault { return clienttest.DropRequest }
	f.TickUntil(l, 250*time.Millisecond, func() bool { return l.State() == client.StateUnknown })
	// Long past the TTL, still unreachable: still UNKNOWN (only the
	// registry judges expiry).
	f.TickUntil(l, 500*time.Millisecond, func() bool { return f.Clock.Now().After(clienttest.T0.Add(3 * clienttest.TTL)) })
	if l.State() != client.StateUnknown {
		t.Fatalf("unreachable registry: %s, want OWNERSHIP_UNKNOWN", l.State())
	}
	w.Net.Fault = nil
	f.Clock.Advance(client.QueryIntervalDefault)
	if st := l.Tick(f.Ctx); st != client.StateExpired {
		t.Fatalf("registry reachable again: %s, want EXPIRED", st)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed on EXPIRED")
	}
	if _, ok := w.S.Lease(clienttest.Resource); ok {
		t.Fatal("session still lists the expired lease")
	}
}

func TestStaleProofRefusedUntilRefreshed(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 4, true)
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	// No Tick for 2s: the 2s status proof is past validUntil − margin.
	f.Clock.Advance(2 * time.Second)
	if _, err := l.Envelope(1, gatetest.Payload("x")); !errors.Is(err, client.ErrProofStale) {
		t.Fatalf("envelope with a stale proof: %v, want ErrProofStale", err)
	}
	if st := l.Tick(f.Ctx); st != client.StateHeld {
		t.Fatalf("tick: %s", st)
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); err != nil {
		t.Fatalf("envelope after refresh: %v", err)
	}
}

func TestBackgroundLoopCancelsCtxOnLostRenewal(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 5, false)
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := l.Ctx()
	w.Net.SetFault(func(string, string) clienttest.Fault { return clienttest.DropRequest })
	deadline := time.Now().Add(20 * time.Second) // real-time bound on a hang, not a timing assertion
	for ctx.Err() == nil && time.Now().Before(deadline) {
		f.Clock.Advance(100 * time.Millisecond)
		time.Sleep(200 * time.Microsecond)
	}
	if ctx.Err() == nil || l.State() != client.StateUnknown {
		t.Fatalf("background loop: %s, ctx %v", l.State(), ctx.Err())
	}
	w.Net.SetFault(nil)
	if err := l.Release(f.Ctx); err != nil {
		t.Fatal(err)
	}
	if l.State() != client.StateReleased {
		t.Fatalf("after release: %s", l.State())
	}
}
