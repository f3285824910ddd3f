// This file proves memgate applies the gate's rules to in-memory state:
// accept, stale, replay, quarantine, a regression that pauses until an
// operator resumes, shadow mode, a failing business function that leaves
// everything as it was, receipts for MUTATION_UNKNOWN, and concurrent
// writers on one resource of which exactly one wins each segment.
package memgate_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/memgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

const res, owner = "mem/one", "worker-a"

func newGate(t *testing.T, mode gate.Mode) (*memgate.Gate, *gatetest.Issuer) {
	iss := gatetest.NewIssuer("mem")
	g, err := memgate.New(memgate.Config{Policy: gate.Policy{Verifier: iss.Verifier}, Clock: fakeclock.New(iss.Now.Add(time.Second)), DefaultMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return g, iss
}

func w(fence uint64, op string) gatetest.Writer {
	return gatetest.Writer{Resource: res, Owner: owner, Lease: "lease-" + op, OperationID: op, Fence: fence}
}

// ledger is the business state: the payloads applied, in order.
type ledger struct {
	mu   sync.Mutex
	rows []string
}

func (l *ledger) add(p string) memgate.BusinessFunc {
	return func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.rows = append(l.rows, p)
		return nil
	}
}

func TestRules(t *testing.T) {
	g, iss := newGate(t, gate.ModeEnforce)
	var l ledger
	ctx := context.Background()
	apply := func(m *gate.Mutation, p string) error { _, err := g.Apply(ctx, owner, m, l.add(p)); return err }
	if err := apply(iss.Mutation(w(5, "op-a"), 1, "a1"), "a1"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		m    *gate.Mutation
		want gate.Outcome
	}{
		{"next segment", iss.Mutation(w(5, "op-a"), 2, "a2"), gate.Accepted},
		{"replay", iss.Mutation(w(5, "op-a"), 2, "a2"), gate.Replayed},
		{"other payload", iss.Mutation(w(5, "op-a"), 2, "evil"), gate.Quarantined},
		{"gap", iss.Mutation(w(5, "op-a"), 4, "a4"), gate.SegmentGap},
		{"late copy of a lower fence", iss.Later(-time.Second).Mutation(w(4, "op-old"), 1, "o1"), gate.StaleOwner},
		{"forged", gatetest.NewIssuer("forger").Mutation(w(9, "op-f"), 1, "f1"), gate.BadProof},
		{"higher fence", iss.Mutation(w(6, "op-b"), 1, "b1"), gate.Accepted},
	}
	for _, s := range steps {
		before := g.State(res)
		err := apply(s.m, s.name)
		if got := gate.OutcomeOf(err); got != s.want {
			t.Fatalf("%s: %s (%v), want %s", s.name, got, err, s.want)
		}
		if after := g.State(res); s.want != gate.Accepted && after.HighestFence != before.HighestFence {
			t.Fatalf("%s moved highestFence %d → %d", s.name, before.HighestFence, after.HighestFence)
		}
	}
	if len(l.rows) != 3 || l.rows[2] != "higher fence" {
		t.Fatalf("business rows %q", l.rows)
	}
	if n := len(g.Records(res, memgate.KindQuarantine)); n != 1 {
		t.Fatalf("%d quarantine records", n)
	}
	if a := g.QueryOperation(res, "op-a", 5); a.Verdict != gate.VerdictAccepted || len(a.Receipts) != 2 {
		t.Fatalf("op-a: %+v", a)
	}
	if a := g.QueryOperation(res, "op-lost", 5); a.Verdict != gate.VerdictProvenAbsent {
		t.Fatalf("op-lost: %+v", a)
	}
}

func TestRegressionPausesUntilResume(t *testing.T) {
	g, iss := newGate(t, gate.ModeEnforce)
	ctx := context.Background()
	var l ledger
	if _, err := g.Apply(ctx, owner, iss.Mutation(w(5, "op-a"), 1, "a1"), l.add("a1")); err != nil {
		t.Fatal(err)
	}
	restored := iss.Later(time.Second).Mutation(w(3, "op-r"), 1, "r1") // HELD, issued after fence 5's grant
	_, err := g.Apply(ctx, owner, restored, l.add("r1"))
	var rej *gate.Rejection
	if !errors.As(err, &rej) || rej.Outcome != gate.FenceRegression || rej.Alarm != gate.AlarmRegression || !g.State(res).Paused {
		t.Fatalf("regression: %v, state %+v", err, g.State(res))
	}
	if _, err := g.Apply(ctx, owner, iss.Mutation(w(6, "op-b"), 1, "b1"), l.add("b1")); !errors.Is(err, gate.ErrResourcePaused) {
		t.Fatalf("paused: %v", err)
	}
	if err := g.Resume(res, 5, "ops", "floor not raised"); !errors.Is(err, gate.ErrResumeRefused) {
		t.Fatalf("resume at highest: %v", err)
	}
	if err := g.Resume(res, 100, "ops", "registry floor raised"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Apply(ctx, owner, restored, l.add("r1")); !errors.Is(err, gate.ErrStaleOwner) || errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("the pre-repair grant after resume: %v", err)
	}
	if _, err := g.Apply(ctx, owner, iss.Mutation(w(101, "op-c"), 1, "c1"), l.add("c1")); err != nil {
		t.Fatalf("above the floor: %v", err)
	}
	regressions := 0
	for _, a := range g.Records(res, memgate.KindAlarm) {
		if a.Alarm == gate.AlarmRegression {
			regressions++
		}
	}
	if len(l.rows) != 2 || regressions != 1 || len(g.Records(res, memgate.KindOperator)) != 1 {
		t.Fatalf("rows %q, records %+v", l.rows, g.Records(res, ""))
	}
}

func TestShadowAndBusinessFailure(t *testing.T) {
	g, iss := newGate(t, gate.ModeShadow)
	ctx := context.Background()
	var l ledger
	if _, err := g.Apply(ctx, owner, iss.Mutation(w(5, "op-a"), 1, "a1"), l.add("a1")); err != nil {
		t.Fatal(err)
	}
	rc, err := g.Apply(ctx, owner, iss.Later(-time.Second).Mutation(w(4, "op-old"), 1, "o1"), l.add("o1"))
	if err != nil || rc.Outcome != gate.StaleOwner || len(l.rows) != 2 || len(g.Records(res, memgate.KindShadow)) != 1 {
		t.Fatalf("shadow stale: %v %+v rows %q", err, rc, l.rows)
	}
	if err := g.SetMode(res, gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := g.SetMode(res, gate.ModeShadow, "ops"); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("downgrade: %v", err)
	}
	before := g.State(res)
	boom := errors.New("disk full")
	if _, err := g.Apply(ctx, owner, iss.Mutation(w(5, "op-a"), 2, "a2"), func() error { return boom }); !errors.Is(err, memgate.ErrBusiness) || !errors.Is(err, boom) {
		t.Fatalf("failing business function: %v", err)
	}
	if after := g.State(res); after != before {
		t.Fatalf("a failed business change moved the state: %+v → %+v", before, after)
	}
	if _, err := g.Apply(ctx, owner, iss.Mutation(w(5, "op-a"), 2, "a2"), l.add("a2")); err != nil {
		t.Fatalf("the same segment after the failure: %v", err)
	}
}

func TestConcurrentWritersOneWinnerPerSegment(t *testing.T) {
	g, iss := newGate(t, gate.ModeEnforce)
	ctx := context.Background()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			m := iss.Mutation(w(7, "op-a"), 1, "p"+string(rune('a'+i)))
			if _, err := g.Apply(ctx, owner, m, func() error { return nil }); err == nil {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d writers won segment 1 of fence 7, want exactly 1", n)
	}
}
