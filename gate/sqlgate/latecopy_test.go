// This file proves, with a real registry and real proofs on each database,
// that a late copy of a released owner's write never pauses the resource
// (the new owner's writes keep being accepted), with and without a status
// querier, and that a registry restored from an old snapshot still pauses
// it. Before the regression rule compared issue times, the first story
// ended in FENCE_REGRESSION and a paused resource.
package sqlgate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

func TestLateCopyAfterRelease(t *testing.T) {
	for _, b := range []backend{sqliteBackend, postgresBackend} {
		t.Run(b.name, func(t *testing.T) {
			t.Run("NoQuerier", func(t *testing.T) { testLateCopy(t, b, false) })
			t.Run("Querier", func(t *testing.T) { testLateCopy(t, b, true) })
			t.Run("BeforeNextAcquire", func(t *testing.T) { testLateCopyBeforeNextAcquire(t, b) })
			t.Run("RestoredRegistryPauses", func(t *testing.T) { testRestoredRegistryPauses(t, b) })
		})
	}
}

// world is a real registry (memory store) and a gate on one database,
// sharing one fake clock (the skew between them is not what this file is
// about; the simulator covers it).
type world struct {
	t     *testing.T
	ctx   context.Context
	clock *fakeclock.Clock
	reg   *clienttest.Registry
	e     *env
}

func newWorld(t *testing.T, b backend, withQuerier bool) *world {
	clock := fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC))
	reg, err := clienttest.NewRegistry(clock, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: context.Background(), clock: clock, reg: reg}
	var q gate.StatusQuerier
	if withQuerier {
		q = gate.QuerierFunc(func(ctx context.Context, g *grant.Grant) (grant.State, uint64, error) {
			is, err := w.reg.Status(ctx, g)
			if err != nil {
				return "", 0, err
			}
			return is.Status.State, is.Status.IssuerEpoch, nil
		})
	}
	w.e = newEnvWith(t, b, sqlgate.Config{Policy: gate.Policy{Verifier: reg.Verifier}, Querier: q, Clock: clock})
	return w
}

func (w *world) acquire(owner, op string) wire.Issued {
	w.t.Helper()
	is, err := w.reg.Acquire(w.ctx, owner, wire.AcquireRequest{
		Resource: "late/one", OperationID: op, OperationClass: "settle", RequestID: "req-" + op, TTLMs: 10_000})
	if err != nil {
		w.t.Fatal(err)
	}
	return is
}

// envelope is what a worker sends for segment seq under is (its latest
// status proof included; none while a fresh grant is its own HELD
// statement).
func envelope(is wire.Issued, seq uint64, payload string) *gate.Mutation {
	g := is.Grant
	m := &gate.Mutation{Resource: g.Resource, Lease: g.Lease, OperationID: "op-" + g.Owner, FenceToken: g.FenceToken,
		SegmentSeq: seq, PayloadDigest: gatetest.Payload(payload), Grant: g.Encode(), GrantProof: is.GrantProof}
	if is.Status != nil {
		m.Status, m.StatusProof = is.Status.Encode(), is.StatusProof
	}
	return m
}

func (w *world) write(m *gate.Mutation, payload string) error {
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		w.t.Fatal(err)
	}
	_, err = w.e.g.Run(w.ctx, w.e.db, g.Owner, m, write(m, payload))
	return err
}

func (w *world) refresh(is wire.Issued) wire.Issued {
	w.t.Helper()
	st, err := w.reg.Status(w.ctx, is.Grant)
	if err != nil || st.Status.State != grant.StateHeld {
		w.t.Fatalf("refresh: %v %+v", err, st.Status)
	}
	is.Status, is.StatusProof = st.Status, st.StatusProof
	return is
}

func (w *world) release(is wire.Issued) {
	w.t.Helper()
	if err := w.reg.Release(w.ctx, is.Grant.Owner, is.Grant.Resource, is.Grant.Lease); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) alarms(kind gate.AlarmKind) int {
	return w.e.count(`SELECT count(*) FROM fencegate_alarms WHERE kind = $1`, string(kind))
}

// testLateCopy: A writes segment 1, builds segment 2 with a fresh proof,
// releases without waiting for its answer; B acquires and writes; A's
// segment 2 arrives a second later. It is STALE_OWNER, the resource is
// not paused, and B's next segment is ACCEPTED.
func testLateCopy(t *testing.T, b backend, withQuerier bool) {
	w := newWorld(t, b, withQuerier)
	a := w.acquire("worker-a", "op-worker-a")
	if err := w.write(envelope(a, 1, "a1"), "a1"); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Second)
	late := envelope(w.refresh(a), 2, "a2") // sent, answer never seen
	w.clock.Advance(10 * time.Millisecond)
	w.release(a)
	w.clock.Advance(10 * time.Millisecond)
	bIs := w.acquire("worker-b", "op-worker-b")
	if err := w.write(envelope(bIs, 1, "b1"), "b1"); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Second)
	err := w.write(late, "a2")
	if !errors.Is(err, gate.ErrStaleOwner) || errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("late copy: %v, want STALE_OWNER and no regression", err)
	}
	if st := w.e.state("late/one"); st.Paused || st.HighestFence != bIs.Grant.FenceToken {
		t.Fatalf("state after the late copy: %+v", st)
	}
	if err := w.write(envelope(w.refresh(bIs), 2, "b2"), "b2"); err != nil {
		t.Fatalf("B's next write: %v", err)
	}
	// A's proof and B's grant are 20 ms apart, inside the 500 ms bound:
	// without a querier that is a suspected regression (alarm, no pause);
	// with one, the registry says A's grant is RELEASED: no alarm at all.
	wantSuspected := 1
	if withQuerier {
		wantSuspected = 0
	}
	if n := w.alarms(gate.AlarmSuspected); n != wantSuspected {
		t.Fatalf("%d suspected alarms, want %d", n, wantSuspected)
	}
	if n := w.alarms(gate.AlarmRegression); n != 0 {
		t.Fatalf("%d regression alarms, want 0", n)
	}
}

// testLateCopyBeforeNextAcquire: A's late segment 2 arrives after A's
// release and before B's acquire. Its proof is still fresh and it is the
// next segment under the highest fence, so the gate accepts it (the
// window Lease.Release's drain closes); B is granted a higher fence and
// its writes are accepted; nothing pauses.
func testLateCopyBeforeNextAcquire(t *testing.T, b backend) {
	w := newWorld(t, b, false)
	a := w.acquire("worker-a", "op-worker-a")
	if err := w.write(envelope(a, 1, "a1"), "a1"); err != nil {
		t.Fatal(err)
	}
	late := envelope(w.refresh(a), 2, "a2")
	w.release(a)
	w.clock.Advance(100 * time.Millisecond)
	if err := w.write(late, "a2"); err != nil {
		t.Fatalf("the late copy before any newer grant: %v", err)
	}
	bIs := w.acquire("worker-b", "op-worker-b")
	for seq, p := range []string{"b1", "b2"} {
		if err := w.write(envelope(w.refresh(bIs), uint64(seq+1), p), p); err != nil {
			t.Fatalf("B segment %d: %v", seq+1, err)
		}
	}
	if st := w.e.state("late/one"); st.Paused || w.alarms(gate.AlarmSuspected)+w.alarms(gate.AlarmRegression) != 0 {
		t.Fatalf("state %+v", st)
	}
}

// testRestoredRegistryPauses: A and B write; the registry's store is then
// restored to before any grant (a new, empty store with the same key) and
// C is granted fence 1 again. C's write carries a HELD proof issued after
// B's grant: FENCE_REGRESSION, an alarm and a pause. After the operator
// raises the floor and resumes, C's grant is stale, and a grant above the
// floor is accepted.
func testRestoredRegistryPauses(t *testing.T, b backend) {
	w := newWorld(t, b, false)
	for _, who := range []string{"worker-a", "worker-b"} {
		is := w.acquire(who, "op-"+who)
		if err := w.write(envelope(is, 1, who), who); err != nil {
			t.Fatal(err)
		}
		w.release(is)
		w.clock.Advance(time.Second)
	}
	restored, err := clienttest.NewRegistry(w.clock, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.reg = restored
	c := w.acquire("worker-c", "op-worker-c")
	if c.Grant.FenceToken != 1 {
		t.Fatalf("the restored registry issued fence %d, want 1", c.Grant.FenceToken)
	}
	err = w.write(envelope(c, 1, "c1"), "c1")
	if !errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("restored registry's grant: %v, want FENCE_REGRESSION", err)
	}
	if st := w.e.state("late/one"); !st.Paused || st.HighestFence != 2 || w.alarms(gate.AlarmRegression) != 1 {
		t.Fatalf("state after the regression: %+v", st)
	}
	if _, err := restored.RaiseFloor(w.ctx, "late/one", 1000); err != nil {
		t.Fatal(err)
	}
	if err := w.e.g.Resume(w.ctx, w.e.db, "late/one", 1000, "ops", "restored registry, floor raised"); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Second)
	if err := w.write(envelope(w.refresh(c), 1, "c1"), "c1"); !errors.Is(err, gate.ErrStaleOwner) || errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("the pre-repair grant after resume: %v", err)
	}
	w.release(c)
	d := w.acquire("worker-d", "op-worker-d")
	if d.Grant.FenceToken <= 1000 {
		t.Fatalf("fence %d after the floor", d.Grant.FenceToken)
	}
	if err := w.write(envelope(d, 1, "d1"), "d1"); err != nil {
		t.Fatalf("a grant above the floor: %v", err)
	}
}
