package clienttest

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/reconcile"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// The MUTATION_UNKNOWN scenarios: a lost ACK is found ACCEPTED and its
// receipt reused; a write that never landed is PROVEN_ABSENT once a newer
// fence wrote, and a new operation goes through under a new fence;
// otherwise it is UNDETERMINED, queued durably with a 15-minute deadline
// that alarms, and settled by Reconcile once the resource is fenced.

func scenarioUnknownAcceptedReusesReceipt(t *testing.T, f *Env) {
	res := f.Resource()
	r := f.Resolver(res, nil)
	a := f.Worker(OwnerA, 40, true)
	l, err := f.Acquire(f.Ctx, a, Request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := l.Envelope(1, gatetest.Payload("a1"))
	committed, err := res.Write(f.Ctx, OwnerA, m, "a1") // committed; the ACK is lost on the way back
	if err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(TTL + 2*time.Second) // and the lease expires before anyone looks
	got, err := r.Resolve(f.Ctx, client.UnknownOf(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != gate.VerdictAccepted || got.Receipt == nil || got.Receipt.ID() != committed.ID() {
		t.Fatalf("resolution %+v, want ACCEPTED with receipt %s", got, committed.ID())
	}
	if got.Queued != nil || res.Rows(t) != 1 {
		t.Fatal("an accepted write was queued or written twice")
	}
}

func scenarioUnknownProvenAbsentThenNewOperationUnderNewFence(t *testing.T, f *Env) {
	res := f.Resource()
	r := f.Resolver(res, nil)
	a, b := f.Worker(OwnerA, 41, true), f.Worker(OwnerB, 42, true)
	la, err := f.Acquire(f.Ctx, a, Request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	lost, _ := la.Envelope(1, gatetest.Payload("a1")) // times out; never reached the resource
	f.Clock.Advance(TTL + 2*time.Second)
	la.Tick(f.Ctx)
	lb, err := f.Acquire(f.Ctx, b, Request("op-b"))
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := lb.Envelope(1, gatetest.Payload("b1"))
	if _, err := res.Write(f.Ctx, OwnerB, eb, "b1"); err != nil {
		t.Fatal(err)
	}
	lb.Settle(1, gate.Accepted)
	if err := lb.Release(f.Ctx); err != nil {
		t.Fatal(err)
	}
	got, err := r.Resolve(f.Ctx, client.UnknownOf(lost))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != gate.VerdictProvenAbsent || got.Queued != nil {
		t.Fatalf("resolution %+v, want PROVEN_ABSENT, not queued", got)
	}
	// A new operation under a new fence.
	la2, err := f.Acquire(f.Ctx, a, Request("op-a-retry"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := la2.Envelope(1, gatetest.Payload("a1"))
	if _, err := res.Write(f.Ctx, OwnerA, m, "a1"); err != nil {
		t.Fatalf("new operation under fence %d: %v", la2.Grant().FenceToken, err)
	}
	// The lost envelope can never be accepted now.
	if _, err := res.Write(f.Ctx, OwnerA, lost, "a1"); gate.IsSuccess(err) {
		t.Fatal("the proven-absent write was accepted later")
	}
}

func scenarioUnknownUndeterminedQueuedAlarmedAndReconciled(t *testing.T, f *Env) {
	res := f.Resource()
	var alarms []reconcile.Item
	r := f.Resolver(res, func(it reconcile.Item) { alarms = append(alarms, it) })
	a := f.Worker(OwnerA, 43, true)
	la, err := f.Acquire(f.Ctx, a, Request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := la.Envelope(1, gatetest.Payload("a1"))
	if _, err := res.Write(f.Ctx, OwnerA, m1, "a1"); err != nil {
		t.Fatal(err)
	}
	lost, _ := la.Envelope(2, gatetest.Payload("a2")) // outcome unknown, and in truth never landed
	f.Clock.Advance(TTL + 2*time.Second)
	la.Tick(f.Ctx)

	got, err := r.Resolve(f.Ctx, client.UnknownOf(lost))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != gate.VerdictUndetermined || got.Queued == nil {
		t.Fatalf("resolution %+v, want UNDETERMINED and queued", got)
	}
	if again, _ := r.Resolve(f.Ctx, client.UnknownOf(lost)); again.Queued.ID != got.Queued.ID {
		t.Fatal("resolving again queued a second item")
	}
	f.Clock.Advance(reconcile.DeadlineDefault - time.Second)
	if _, err := r.Reconcile(f.Ctx); err != nil || len(alarms) != 0 {
		t.Fatalf("before the deadline: err %v, %d alarms", err, len(alarms))
	}
	f.Clock.Advance(time.Second)
	if _, err := r.Reconcile(f.Ctx); err != nil || len(alarms) != 1 {
		t.Fatalf("at the deadline: err %v, %d alarms, want 1", err, len(alarms))
	}
	if age, _ := r.Queue.(*reconcile.Queue).OldestAge(f.Ctx); age != reconcile.DeadlineDefault {
		t.Fatalf("oldest age %s, want %s", age, reconcile.DeadlineDefault)
	}
	if _, err := r.Reconcile(f.Ctx); err != nil || len(alarms) != 1 {
		t.Fatalf("the alarm fired again: %d", len(alarms))
	}
	// Fence the resource: a new grant writes, raising highestFence above
	// the lost write's fence. Now its absence is proven.
	la2, err := f.Acquire(f.Ctx, a, Request("op-a-2"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := la2.Envelope(1, gatetest.Payload("fence"))
	if _, err := res.Write(f.Ctx, OwnerA, m, "fence"); err != nil {
		t.Fatal(err)
	}
	settled, err := r.Reconcile(f.Ctx)
	if err != nil || len(settled) != 1 || settled[0].Verdict != gate.VerdictProvenAbsent {
		t.Fatalf("reconcile after fencing: %+v, %v", settled, err)
	}
	if age, _ := r.Queue.(*reconcile.Queue).OldestAge(f.Ctx); age != 0 {
		t.Fatalf("oldest age %s after settling, want 0", age)
	}
}
