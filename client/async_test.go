// This file proves envelopes handed to an asynchronous worker of the same
// identity carry fence, root and segment together and get exactly the
// gate's checks: refreshed by the holder while the grant is held they are
// accepted, and the release's drain waits for the refreshed proof; once a
// higher fence wrote, or under another identity, they are rejected.
package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestAsyncWorkerEnvelopesGetTheSameChecks(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	res := f.Resource()
	a, b := f.Worker(clienttest.OwnerA, 22, true), f.Worker(clienttest.OwnerB, 23, true)
	la, err := f.Acquire(f.Ctx, a, clienttest.Request("op-a"))
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
		m, err := la.Refresh(m) // the proof aged in the queue
		if err != nil {
			return err
		}
		_, err = res.Write(f.Ctx, clienttest.OwnerA, m, "queued")
		return err
	}
	// Segment 1 waits 1.5s in the queue (its proof is stale by then) and
	// is refreshed: accepted.
	f.Clock.Advance(1500 * time.Millisecond)
	la.Tick(f.Ctx)
	if err := worker(<-queue); err != nil {
		t.Fatalf("queued segment 1: %v", err)
	}
	// A's lease ends and B writes under a higher fence. (Release would
	// drain: wait for the queued envelopes' proofs to lapse. This test is
	// about what the gate does with them, so it releases at once.)
	if err := la.ReleaseNoDrain(f.Ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := f.Acquire(f.Ctx, b, clienttest.Request("op-b"))
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := lb.Envelope(1, gatetest.Payload("b1"))
	if _, err := res.Write(f.Ctx, clienttest.OwnerB, eb, "b1"); err != nil {
		t.Fatal(err)
	}
	// Segment 2 cannot be refreshed (the lease is released); sent as it
	// is, the gate rejects it (stale proof, and a fence below the highest).
	m2 := <-queue
	if err := worker(m2); !errors.Is(err, client.ErrNotCertain) {
		t.Fatalf("refresh of a released lease: %v, want ErrNotCertain", err)
	}
	if _, err := res.Write(f.Ctx, clienttest.OwnerA, m2, "queued"); gate.IsSuccess(err) || gate.OutcomeOf(err) == "" {
		t.Fatalf("stale queued segment: %v, want a gate rejection", err)
	}
	// A worker with another identity is refused whatever it carries.
	m3 := <-queue
	if _, err := res.Write(context.Background(), "someone-else", m3, "x"); !errors.Is(err, gate.ErrIdentityMismatch) {
		t.Fatalf("other identity: %v, want IDENTITY_MISMATCH", err)
	}
	if n := res.Rows(t); n != 2 {
		t.Fatalf("%d ledger rows, want 2", n)
	}
}
