package conformance

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// This file holds the cases that span writers or time: receipt verdicts,
// shadow → enforce, and concurrent writers on one resource.

func testReceiptQuery(t T, e *Env) {
	const r = "conf/receipts"
	r1 := mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	r2 := mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 2, "a2"), "a2")
	ask := func(op string, fence uint64) gate.Answer {
		t.Helper()
		a, err := e.H.QueryOperation(e.Ctx, r, op, fence)
		if err != nil {
			t.Fatalf("query %s under %d: %v", op, fence, err)
		}
		return a
	}
	a := ask("op-a", 5)
	if a.Verdict != gate.VerdictAccepted || len(a.Receipts) != 2 || a.Receipts[0].ID() != r1.ID() || a.Receipts[1].ID() != r2.ID() || a.HighestFence != 5 {
		t.Fatalf("accepted operation: %+v", a)
	}
	if a := ask("op-old", 4); a.Verdict != gate.VerdictProvenAbsent || len(a.Receipts) != 0 || a.HighestFence != 5 {
		t.Fatalf("operation under a fence below highest: %+v", a)
	}
	for _, f := range []uint64{5, 6} {
		if a := ask("op-new", f); a.Verdict != gate.VerdictUndetermined {
			t.Fatalf("operation under fence %d ≥ highest: %+v", f, a)
		}
	}
	if a, err := e.H.QueryOperation(e.Ctx, "conf/never-seen", "op-a", 1); err != nil || a.Verdict != gate.VerdictUndetermined || a.HighestFence != 0 {
		t.Fatalf("never-seen resource: %+v %v", a, err)
	}
	// A receipt is found under a later fence too, after the state moved on.
	mustAccept(t, e, e.H, e.Mut(r, 6, "op-b", 1, "b1"), "b1")
	if a := ask("op-a", 5); a.Verdict != gate.VerdictAccepted || len(a.Receipts) != 2 || a.HighestFence != 6 {
		t.Fatalf("accepted operation after a newer fence: %+v", a)
	}
}

func testModes(t T, e *Env) {
	const r = "conf/modes"
	if err := e.H.SetMode(e.Ctx, r, gate.ModeShadow); err != nil {
		t.Fatalf("set shadow on a new resource: %v", err)
	}
	if st := state(t, e, e.H, r); st.Mode != gate.ModeShadow {
		t.Fatalf("mode not stored: %+v", st)
	}
	if rc := mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1"); rc.Mode != gate.ModeShadow {
		t.Fatalf("receipt mode %q", rc.Mode)
	}
	// Shadow: a stale write is decided, logged and let through.
	stale := e.Iss.WithStatus(e.Mut(r, 4, "op-old", 1, "old"), grant.StateExpired)
	rc, err := apply(t, e, e.H, stale, "old")
	if err != nil || rc.Outcome != gate.StaleOwner {
		t.Fatalf("shadow mode must let the stale write through and say so: %+v %v", rc, err)
	}
	// A regression is recorded, never paused, in shadow mode.
	_, err = apply(t, e, e.H, e.Iss.Later(time.Second).Mutation(W(r, 3, "op-restored"), 1, "r1"), "r1")
	if err != nil {
		t.Fatalf("shadow regression: %v", err)
	}
	st := state(t, e, e.H, r)
	if st.Paused || st.HighestFence != 5 {
		t.Fatalf("shadow mode paused or moved highestFence: %+v", st)
	}
	if rs := records(t, e, e.H, r); rs.ShadowLog != 2 || !slices.Equal(rs.Alarms, []gate.AlarmKind{gate.AlarmRegression}) {
		t.Fatalf("shadow records %+v", rs)
	}
	if fx := effects(t, e, e.H, r); !slices.Equal(fx, []string{"a1", "old", "r1"}) {
		t.Fatalf("effects %q", fx)
	}
	if err := e.H.SetMode(e.Ctx, r, gate.ModeEnforce); err != nil {
		t.Fatalf("enforce: %v", err)
	}
	if err := e.H.SetMode(e.Ctx, r, gate.ModeShadow); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("enforce → shadow must be refused: %v", err)
	}
	if st := state(t, e, e.H, r); st.Mode != gate.ModeEnforce {
		t.Fatalf("mode after a refused downgrade: %+v", st)
	}
	before := snap(t, e, e.H, r)
	_, err = apply(t, e, e.H, stale, "old")
	wantOutcome(t, err, gate.StaleOwner)
	unchanged(t, e, e.H, r, before, "a stale write in enforce mode")
}

// Concurrent workload: fences 1..concurrentFences, concurrentCopies
// writers each under the same grant with different payloads, started
// together; then as many writers racing for the next segment.
const (
	concurrentFences = 4
	concurrentCopies = 2
	concurrentRounds = 3
)

type attempt struct {
	fence, seq uint64
	payload    string
	outcome    gate.Outcome
	err        error
}

func race(t T, e *Env, ms []*gate.Mutation, payloads []string) []attempt {
	out := make([]attempt, len(ms))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := e.H.Apply(e.Ctx, Owner, ms[i], payloads[i])
			out[i] = attempt{ms[i].FenceToken, ms[i].SegmentSeq, payloads[i], gate.OutcomeOf(err), err}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

func testConcurrent(t T, e *Env) {
	for round := range concurrentRounds {
		r := fmt.Sprintf("conf/concurrent-%d", round)
		var ms []*gate.Mutation
		var ps []string
		for f := uint64(1); f <= concurrentFences; f++ {
			for c := range concurrentCopies {
				p := fmt.Sprintf("f%d-s1-c%d", f, c)
				ms, ps = append(ms, e.Mut(r, f, fmt.Sprintf("op-%d", f), 1, p)), append(ps, p)
			}
		}
		got := race(t, e, ms, ps)
		ms, ps = nil, nil
		for c := range concurrentFences {
			p := fmt.Sprintf("f%d-s2-c%d", concurrentFences, c)
			ms, ps = append(ms, e.Mut(r, concurrentFences, fmt.Sprintf("op-%d", concurrentFences), 2, p)), append(ps, p)
		}
		got = append(got, race(t, e, ms, ps)...)
		checkRace(t, e, r, got)
	}
}

// checkRace: each (fence, segment) has at most one ACCEPTED; the top
// fence's two segments each have exactly one; the business effects are
// exactly the accepted payloads in fence order; nothing paused.
func checkRace(t T, e *Env, r string, got []attempt) {
	t.Helper()
	wins := map[[2]uint64][]string{}
	for _, a := range got {
		switch a.outcome {
		case gate.Accepted:
			k := [2]uint64{a.fence, a.seq}
			wins[k] = append(wins[k], a.payload)
		case gate.StaleOwner, gate.Quarantined:
		default:
			t.Fatalf("fence %d segment %d: unexpected %q (%v)", a.fence, a.seq, a.outcome, a.err)
		}
	}
	for k, ps := range wins {
		if len(ps) != 1 {
			t.Fatalf("fence %d segment %d accepted %d times: %q", k[0], k[1], len(ps), ps)
		}
	}
	for seq := uint64(1); seq <= 2; seq++ {
		if len(wins[[2]uint64{concurrentFences, seq}]) != 1 {
			t.Fatalf("fence %d segment %d: no winner", concurrentFences, seq)
		}
	}
	fx := effects(t, e, e.H, r)
	if len(fx) != len(wins) {
		t.Fatalf("%d effects %q for %d accepts %v", len(fx), fx, len(wins), wins)
	}
	var lastFence, lastSeq uint64
	for _, p := range fx {
		var f, s, c uint64
		if _, err := fmt.Sscanf(p, "f%d-s%d-c%d", &f, &s, &c); err != nil {
			t.Fatalf("effect %q: %v", p, err)
		}
		if w := wins[[2]uint64{f, s}]; len(w) != 1 || w[0] != p {
			t.Fatalf("effect %q was not the accepted payload %q", p, w)
		}
		if f < lastFence || f == lastFence && s != lastSeq+1 || f > lastFence && s != 1 {
			t.Fatalf("effect %q after fence %d segment %d: out of order", p, lastFence, lastSeq)
		}
		lastFence, lastSeq = f, s
	}
	st := state(t, e, e.H, r)
	if st.Paused || st.HighestFence != concurrentFences || st.LastSegmentSeq != 2 {
		t.Fatalf("state after the race: %+v", st)
	}
}
