// This file proves the lease shell against a real registry on a fake clock
// and a lossy network: the happy path, a lost renewal (OWNERSHIP_UNKNOWN at
// once, context cancelled, envelopes refused, back to HELD only on the
// registry's word), confirmed expiry, a stale status proof, and release.
package client_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/clienttest"
	"github.com/fencegate/fencegate/gate/gatetest"
)

func TestHappyPathRenewsAndReleases(t *testing.T) {
	f := newFixture(t)
	w := f.worker(ownerA, 1, true)
	l, err := f.acquire(f.ctx, w, request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	if l.State() != client.StateHeld || l.Ctx().Err() != nil {
		t.Fatalf("after acquire: %s, ctx %v", l.State(), l.Ctx().Err())
	}
	ctx := l.Ctx()
	// Run for three TTLs: renewals and proof refreshes keep it HELD.
	end := f.clock.Now().Add(3 * ttl)
	f.tickUntil(l, 250*time.Millisecond, func() bool { return !f.clock.Now().Before(end) })
	if l.State() != client.StateHeld || ctx.Err() != nil {
		t.Fatalf("after 3 TTLs: %s, ctx %v", l.State(), ctx.Err())
	}
	if n := len(calls(w.net, "Renew")); n < 6 {
		t.Fatalf("%d renewals in 3 TTLs, want at least 6 (every TTL/3 ± jitter)", n)
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); err != nil {
		t.Fatalf("envelope while held: %v", err)
	}
	if err := l.Release(f.ctx); err != nil {
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
	if _, err := l.Envelope(1, gatetest.Payload("x")); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("envelope after release: %v, want ErrNotHeld", err)
	}
	want := []string{"REQUESTED -AcquireOK-> HELD", "HELD -ReleaseOK-> RELEASED"}
	if got := compact(w.rec.lines()); !slices.Equal(got, want) {
		t.Fatalf("transitions %q, want %q", got, want)
	}
}

func TestLostRenewalGoesUnknownThenHeldOnConfirmation(t *testing.T) {
	f := newFixture(t)
	w := f.worker(ownerA, 2, true)
	l, err := f.acquire(f.ctx, w, request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	first := l.Ctx()
	renews := 0
	w.net.Fault = func(op, _ string) clienttest.Fault {
		if op != "Renew" {
			return clienttest.Pass
		}
		if renews++; renews == 1 {
			return clienttest.DropResponse // applied, answer lost
		}
		return clienttest.DropRequest // and the registry stays unreachable
	}
	f.tickUntil(l, 250*time.Millisecond, func() bool { return l.State() != client.StateHeld })
	if l.State() != client.StateUnknown {
		t.Fatalf("after a lost renewal: %s, want OWNERSHIP_UNKNOWN", l.State())
	}
	if first.Err() == nil {
		t.Fatal("ownership context not cancelled at once")
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("envelope while unknown: %v, want ErrNotHeld", err)
	}
	// Queries keep failing: it stays UNKNOWN, never guesses.
	for range 3 {
		f.clock.Advance(client.QueryIntervalDefault)
		if st := l.Tick(f.ctx); st != client.StateUnknown {
			t.Fatalf("unanswered query moved the lease to %s", st)
		}
	}
	w.net.Fault = nil
	f.clock.Advance(client.QueryIntervalDefault)
	if st := l.Tick(f.ctx); st != client.StateHeld {
		t.Fatalf("after the registry confirmed the grant: %s, want HELD", st)
	}
	second := l.Ctx()
	if second == first || second.Err() != nil || first.Err() == nil {
		t.Fatal("want a new live context and the old one still cancelled")
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); err != nil {
		t.Fatalf("envelope after confirmation: %v", err)
	}
	want := []string{
		"REQUESTED -AcquireOK-> HELD", "HELD -RenewDue-> RENEWING", "RENEWING -RenewLost-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN", // the immediate query
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryHeld-> HELD",
	}
	got := w.rec.lines()
	// Drop routine refresh cycles before the loss.
	for len(got) > 2 && got[1] == "HELD -RenewDue-> RENEWING" && got[2] == "RENEWING -RenewOK-> HELD" {
		got = append(got[:1], got[3:]...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("transitions\n%q\nwant\n%q", got, want)
	}
}

func TestUnknownBecomesExpiredOnlyWhenRegistryConfirms(t *testing.T) {
	f := newFixture(t)
	w := f.worker(ownerA, 3, true)
	l, err := f.acquire(f.ctx, w, request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	w.net.Fault = func(string, string) clienttest.Fault { return clienttest.DropRequest }
	f.tickUntil(l, 250*time.Millisecond, func() bool { return l.State() == client.StateUnknown })
	// Long past the TTL, still unreachable: still UNKNOWN (only the
	// registry judges expiry).
	f.tickUntil(l, 500*time.Millisecond, func() bool { return f.clock.Now().After(clienttest.T0.Add(3 * ttl)) })
	if l.State() != client.StateUnknown {
		t.Fatalf("unreachable registry: %s, want OWNERSHIP_UNKNOWN", l.State())
	}
	w.net.Fault = nil
	f.clock.Advance(client.QueryIntervalDefault)
	if st := l.Tick(f.ctx); st != client.StateExpired {
		t.Fatalf("registry reachable again: %s, want EXPIRED", st)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed on EXPIRED")
	}
	if _, ok := w.s.Lease(resource); ok {
		t.Fatal("session still lists the expired lease")
	}
}

func TestStaleProofRefusedUntilRefreshed(t *testing.T) {
	f := newFixture(t)
	w := f.worker(ownerA, 4, true)
	l, err := f.acquire(f.ctx, w, request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	// No Tick for 2s: the 2s status proof is past validUntil − margin.
	f.clock.Advance(2 * time.Second)
	if _, err := l.Envelope(1, gatetest.Payload("x")); !errors.Is(err, client.ErrProofStale) {
		t.Fatalf("envelope with a stale proof: %v, want ErrProofStale", err)
	}
	if st := l.Tick(f.ctx); st != client.StateHeld {
		t.Fatalf("tick: %s", st)
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); err != nil {
		t.Fatalf("envelope after refresh: %v", err)
	}
}

func TestBackgroundLoopCancelsCtxOnLostRenewal(t *testing.T) {
	f := newFixture(t)
	w := f.worker(ownerA, 5, false)
	l, err := f.acquire(f.ctx, w, request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := l.Ctx()
	w.net.Fault = func(string, string) clienttest.Fault { return clienttest.DropRequest }
	deadline := time.Now().Add(20 * time.Second) // real-time bound on a hang, not a timing assertion
	for ctx.Err() == nil && time.Now().Before(deadline) {
		f.clock.Advance(100 * time.Millisecond)
		time.Sleep(200 * time.Microsecond)
	}
	if ctx.Err() == nil || l.State() != client.StateUnknown {
		t.Fatalf("background loop: %s, ctx %v", l.State(), ctx.Err())
	}
	w.net.Fault = nil
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	if l.State() != client.StateReleased {
		t.Fatalf("after release: %s", l.State())
	}
}
