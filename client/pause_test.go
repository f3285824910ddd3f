// This file proves the stale-writer story end to end on a real registry
// and a real gate on SQLite: an owner paused past its TTL emits no
// mutation once it resumes, and the gate rejects the one it emitted
// before the pause; envelopes handed to an asynchronous worker get the
// same checks.
package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatetest"
)

func TestPausePastTTL(t *testing.T) {
	f := newFixture(t)
	res := f.gate()
	a, b := f.worker(ownerA, 20, true), f.worker(ownerB, 21, true)
	la, err := f.acquire(f.ctx, a, request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	e1, err := la.Envelope(1, gatetest.Payload("a1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.write(f.ctx, ownerA, e1, "a1"); err != nil {
		t.Fatalf("A's first segment: %v", err)
	}
	inFlight, err := la.Envelope(2, gatetest.Payload("a2")) // emitted, then A stalls
	if err != nil {
		t.Fatal(err)
	}

	f.clock.Advance(ttl + 2*time.Second) // A is paused: no Tick, no renewal

	lb, err := f.acquire(f.ctx, b, request("op-b"))
	if err != nil {
		t.Fatalf("B takes over: %v", err)
	}
	eb, err := lb.Envelope(1, gatetest.Payload("b1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.write(f.ctx, ownerB, eb, "b1"); err != nil {
		t.Fatalf("B's segment: %v", err)
	}

	// A resumes. Before its loop has run, it already refuses new effects.
	if _, err := la.Envelope(2, gatetest.Payload("a2")); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("envelope after the pause: %v, want ErrNotHeld", err)
	}
	if st := la.Tick(f.ctx); st != client.StateExpired {
		t.Fatalf("A after resuming: %s, want EXPIRED (registry-confirmed)", st)
	}
	// The envelope A emitted before the pause arrives late: rejected.
	_, err = res.write(f.ctx, ownerA, inFlight, "a2")
	if gate.IsSuccess(err) || gate.OutcomeOf(err) == "" {
		t.Fatalf("late write from the paused owner: %v, want a gate rejection", err)
	}
	if n := res.rows(t); n != 2 {
		t.Fatalf("%d ledger rows, want 2 (a1, b1)", n)
	}
	// And the resource's highest fence is B's, so no A envelope can ever
	// be accepted again, whatever status it carries.
	st, err := res.g.State(f.ctx, res.db, resource)
	if err != nil {
		t.Fatal(err)
	}
	if st.HighestFence != lb.Grant().FenceToken {
		t.Fatalf("highestFence %d, want B's %d", st.HighestFence, lb.Grant().FenceToken)
	}
}

func TestAsyncWorkerEnvelopesGetTheSameChecks(t *testing.T) {
	f := newFixture(t)
	res := f.gate()
	a, b := f.worker(ownerA, 22, true), f.worker(ownerB, 23, true)
	la, err := f.acquire(f.ctx, a, request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	// The producer builds segments 1..3 and queues them for a downstream
	// worker of the same identity.
	queue := make(chan gate.Mutation, 3)
	for seq := uint64(1); seq <= 3; seq++ {
		m, err := la.Envelope(seq, gatetest.Payload("a"+string(rune('0'+seq))))
		if err != nil {
			t.Fatal(err)
		}
		queue <- m
	}
	close(queue)
	worker := func(m gate.Mutation) error {
		m, err := client.Refresh(f.ctx, a.net, m) // the proof aged in the queue
		if err != nil {
			return err
		}
		_, err = res.write(f.ctx, ownerA, m, "queued")
		return err
	}
	// Segment 1 waits 1.5s in the queue (its proof is stale by then) and
	// is refreshed: accepted.
	f.clock.Advance(1500 * time.Millisecond)
	la.Tick(f.ctx)
	if err := worker(<-queue); err != nil {
		t.Fatalf("queued segment 1: %v", err)
	}
	// A's lease ends and B writes under a higher fence.
	if err := la.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := f.acquire(f.ctx, b, request("op-b"))
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := lb.Envelope(1, gatetest.Payload("b1"))
	if _, err := res.write(f.ctx, ownerB, eb, "b1"); err != nil {
		t.Fatal(err)
	}
	// Segment 2 cannot be refreshed (the registry says RELEASED); sent as
	// it is, the gate rejects it (stale proof, and a fence below the highest).
	m2 := <-queue
	if err := worker(m2); !errors.Is(err, client.ErrNotHeld) {
		t.Fatalf("refresh of a released grant: %v, want ErrNotHeld", err)
	}
	if _, err := res.write(f.ctx, ownerA, m2, "queued"); gate.IsSuccess(err) || gate.OutcomeOf(err) == "" {
		t.Fatalf("stale queued segment: %v, want a gate rejection", err)
	}
	// A worker with another identity is refused whatever it carries.
	m3 := <-queue
	if _, err := res.write(context.Background(), "someone-else", m3, "x"); !errors.Is(err, gate.ErrIdentityMismatch) {
		t.Fatalf("other identity: %v, want IDENTITY_MISMATCH", err)
	}
	if n := res.rows(t); n != 2 {
		t.Fatalf("%d ledger rows, want 2", n)
	}
}
