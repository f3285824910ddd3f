// This file proves each MUTATION_UNKNOWN branch against a real registry
// and a real gate on SQLite: a lost ACK is found ACCEPTED and its receipt
// reused; a write that never landed is PROVEN_ABSENT once a newer fence
// wrote, and a new operation goes through under a new fence; otherwise it
// is UNDETERMINED, queued durably with a 15-minute deadline that alarms,
// and settled by Reconcile once the resource is fenced.
package client_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/reconcile"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatetest"
)

func (f *fixture) resolver(res *resourceDB, onAlarm func(reconcile.Item)) *client.Resolver {
	q, err := reconcile.Open(f.ctx, filepath.Join(f.t.TempDir(), "reconcile.db"), reconcile.Options{Clock: f.clock, OnAlarm: onAlarm})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { q.Close() })
	return &client.Resolver{Queue: q, Receipts: client.ReceiptQuerierFunc(
		func(ctx context.Context, r, op string, fence uint64) (gate.Answer, error) {
			return res.g.QueryOperation(ctx, res.db, r, op, fence)
		})}
}

func TestUnknownAcceptedReusesReceipt(t *testing.T) {
	f := newFixture(t)
	res := f.gate()
	r := f.resolver(res, nil)
	a := f.worker(ownerA, 40, true)
	l, err := f.acquire(f.ctx, a, request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := l.Envelope(1, gatetest.Payload("a1"))
	committed, err := res.write(f.ctx, ownerA, m, "a1") // committed; the ACK is lost on the way back
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(ttl + 2*time.Second) // and the lease expires before anyone looks
	got, err := r.Resolve(f.ctx, client.UnknownOf(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != gate.VerdictAccepted || got.Receipt == nil || got.Receipt.ID() != committed.ID() {
		t.Fatalf("resolution %+v, want ACCEPTED with receipt %s", got, committed.ID())
	}
	if got.Queued != nil || res.rows(t) != 1 {
		t.Fatal("an accepted write was queued or written twice")
	}
}

func TestUnknownProvenAbsentThenNewOperationUnderNewFence(t *testing.T) {
	f := newFixture(t)
	res := f.gate()
	r := f.resolver(res, nil)
	a, b := f.worker(ownerA, 41, true), f.worker(ownerB, 42, true)
	la, err := f.acquire(f.ctx, a, request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	lost, _ := la.Envelope(1, gatetest.Payload("a1")) // times out; never reached the resource
	f.clock.Advance(ttl + 2*time.Second)
	la.Tick(f.ctx)
	lb, err := f.acquire(f.ctx, b, request("op-b"))
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := lb.Envelope(1, gatetest.Payload("b1"))
	if _, err := res.write(f.ctx, ownerB, eb, "b1"); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	got, err := r.Resolve(f.ctx, client.UnknownOf(lost))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != gate.VerdictProvenAbsent || got.Queued != nil {
		t.Fatalf("resolution %+v, want PROVEN_ABSENT, not queued", got)
	}
	// A new operation under a new fence.
	la2, err := f.acquire(f.ctx, a, request("op-a-retry"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := la2.Envelope(1, gatetest.Payload("a1"))
	if _, err := res.write(f.ctx, ownerA, m, "a1"); err != nil {
		t.Fatalf("new operation under fence %d: %v", la2.Grant().FenceToken, err)
	}
	// The lost envelope can never be accepted now.
	if _, err := res.write(f.ctx, ownerA, lost, "a1"); gate.IsSuccess(err) {
		t.Fatal("the proven-absent write was accepted later")
	}
}

func TestUnknownUndeterminedQueuedAlarmedAndReconciled(t *testing.T) {
	f := newFixture(t)
	res := f.gate()
	var alarms []reconcile.Item
	r := f.resolver(res, func(it reconcile.Item) { alarms = append(alarms, it) })
	a := f.worker(ownerA, 43, true)
	la, err := f.acquire(f.ctx, a, request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := la.Envelope(1, gatetest.Payload("a1"))
	if _, err := res.write(f.ctx, ownerA, m1, "a1"); err != nil {
		t.Fatal(err)
	}
	lost, _ := la.Envelope(2, gatetest.Payload("a2")) // outcome unknown, and in truth never landed
	f.clock.Advance(ttl + 2*time.Second)
	la.Tick(f.ctx)

	got, err := r.Resolve(f.ctx, client.UnknownOf(lost))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != gate.VerdictUndetermined || got.Queued == nil {
		t.Fatalf("resolution %+v, want UNDETERMINED and queued", got)
	}
	if again, _ := r.Resolve(f.ctx, client.UnknownOf(lost)); again.Queued.ID != got.Queued.ID {
		t.Fatal("resolving again queued a second item")
	}
	f.clock.Advance(reconcile.DeadlineDefault - time.Second)
	if _, err := r.Reconcile(f.ctx); err != nil || len(alarms) != 0 {
		t.Fatalf("before the deadline: err %v, %d alarms", err, len(alarms))
	}
	f.clock.Advance(time.Second)
	if _, err := r.Reconcile(f.ctx); err != nil || len(alarms) != 1 {
		t.Fatalf("at the deadline: err %v, %d alarms, want 1", err, len(alarms))
	}
	if age, _ := r.Queue.OldestAge(f.ctx); age != reconcile.DeadlineDefault {
		t.Fatalf("oldest age %s, want %s", age, reconcile.DeadlineDefault)
	}
	if _, err := r.Reconcile(f.ctx); err != nil || len(alarms) != 1 {
		t.Fatalf("the alarm fired again: %d", len(alarms))
	}
	// Fence the resource: a new grant writes, raising highestFence above
	// the lost write's fence. Now its absence is proven.
	la2, err := f.acquire(f.ctx, a, request("op-a-2"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := la2.Envelope(1, gatetest.Payload("fence"))
	if _, err := res.write(f.ctx, ownerA, m, "fence"); err != nil {
		t.Fatal(err)
	}
	settled, err := r.Reconcile(f.ctx)
	if err != nil || len(settled) != 1 || settled[0].Verdict != gate.VerdictProvenAbsent {
		t.Fatalf("reconcile after fencing: %+v, %v", settled, err)
	}
	if age, _ := r.Queue.OldestAge(f.ctx); age != 0 {
		t.Fatalf("oldest age %s after settling, want 0", age)
	}
}
