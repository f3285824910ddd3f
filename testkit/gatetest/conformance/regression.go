package conformance

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// This file holds the regression rule as an adapter must store it: a
// proven regression pauses (alarm, pause persisted, highestFence kept), a
// late copy after a release does not, a close call is settled by the
// querier or recorded as suspected, and Resume keeps its floor.

// pauseByRegression accepts fence 5 and then a fence-3 write whose HELD
// proof a restored registry issued a second after fence 5's grant.
func pauseByRegression(t T, e *Env, h Harness, r string) {
	t.Helper()
	mustAccept(t, e, h, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	restored := e.Iss.Later(time.Second)
	_, err := apply(t, e, h, restored.Mutation(W(r, 3, "op-restored"), 1, "r1"), "r1")
	wantOutcome(t, err, gate.FenceRegression)
	var rej *gate.Rejection
	if !errors.As(err, &rej) || !rej.Recorded || !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("a regression must be recorded and match STALE_OWNER: %v", err)
	}
}

func testRegression(t T, e *Env) {
	const r = "conf/regression"
	pauseByRegression(t, e, e.H, r)
	st := state(t, e, e.H, r)
	if !st.Paused || st.PausedReason == "" || st.HighestFence != 5 || st.LastSegmentSeq != 1 {
		t.Fatalf("the pause must be stored with highestFence kept: %+v", st)
	}
	wantAlarms(t, e, e.H, r, gate.AlarmRegression)
	if fx := effects(t, e, e.H, r); !slices.Equal(fx, []string{"a1"}) {
		t.Fatalf("effects %q", fx)
	}
	before := snap(t, e, e.H, r)
	_, err := apply(t, e, e.H, e.Mut(r, 6, "op-b", 1, "b1"), "b1")
	wantOutcome(t, err, gate.ResourcePaused)
	_, err = apply(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	wantOutcome(t, err, gate.Replayed) // a lost ACK is still answered
	unchanged(t, e, e.H, r, before, "writes to a paused resource")
	// Two grants with one fence is a regression too, whatever the proofs.
	const r2 = "conf/regression-equal"
	mustAccept(t, e, e.H, e.Mut(r2, 5, "op-a", 1, "a1"), "a1")
	w := W(r2, 5, "op-a")
	w.Lease = "lease-reissued"
	_, err = apply(t, e, e.H, e.Iss.Mutation(w, 2, "a2"), "a2")
	wantOutcome(t, err, gate.FenceRegression)
	if st := state(t, e, e.H, r2); !st.Paused {
		t.Fatalf("equal fence under another grant did not pause: %+v", st)
	}
	// A higher fence whose grant was issued seconds before the grant at
	// highest: the registry issued the lower fence after it (a restore
	// from before the higher grant). Nothing is accepted.
	const r3 = "conf/regression-higher-earlier"
	mustAccept(t, e, e.H, e.Mut(r3, 5, "op-a", 1, "a1"), "a1")
	_, err = apply(t, e, e.H, e.Iss.Later(-5*time.Second).Mutation(W(r3, 6, "op-early"), 1, "e1"), "e1")
	wantOutcome(t, err, gate.FenceRegression)
	if st := state(t, e, e.H, r3); !st.Paused || st.HighestFence != 5 {
		t.Fatalf("a higher fence issued before the grant at highest did not pause with highestFence kept: %+v", st)
	}
	wantAlarms(t, e, e.H, r3, gate.AlarmRegression)
	if fx := effects(t, e, e.H, r3); !slices.Equal(fx, []string{"a1"}) {
		t.Fatalf("effects %q", fx)
	}
}

// testLateCopy: A's write arrives after A released and B (fence 5)
// wrote. A's proof is still valid but was issued before B's grant: an
// ordinary stale write, no alarm, no pause, and B keeps writing.
func testLateCopy(t T, e *Env) {
	const r = "conf/late"
	early := e.Iss.Later(-time.Second) // A's grant and proof, before B's grant
	late := early.Mutation(W(r, 4, "op-old"), 1, "late")
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-b", 1, "b1"), "b1")
	before := snap(t, e, e.H, r)
	_, err := apply(t, e, e.H, late, "late")
	wantOutcome(t, err, gate.StaleOwner)
	unchanged(t, e, e.H, r, before, "a late copy after release")
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-b", 2, "b2"), "b2")
	// Within the skew bound of B's grant and no querier: stale, a
	// REGRESSION_SUSPECTED alarm, still no pause.
	_, err = apply(t, e, e.H, e.Mut(r, 4, "op-old", 1, "close"), "close")
	wantOutcome(t, err, gate.StaleOwner)
	wantAlarms(t, e, e.H, r, gate.AlarmSuspected)
	if st := state(t, e, e.H, r); st.Paused {
		t.Fatalf("a close call paused the resource: %+v", st)
	}
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-b", 3, "b3"), "b3")
	if fx := effects(t, e, e.H, r); !slices.Equal(fx, []string{"b1", "b2", "b3"}) {
		t.Fatalf("effects %q", fx)
	}
}

// testQuerier: with a StatusQuerier the close call is settled by the
// registry's word, asked with the state held.
func testQuerier(t T, e *Env) {
	var heldFence uint64 = 5
	q := gate.QuerierFunc(func(_ context.Context, g *grant.Grant) (grant.State, uint64, error) {
		if g.FenceToken == heldFence {
			return grant.StateHeld, e.Iss.Epoch, nil
		}
		return grant.StateReleased, e.Iss.Epoch, nil
	})
	h := e.WithQuerier(q)
	const r = "conf/querier"
	mustAccept(t, e, h, e.Mut(r, 5, "op-b", 1, "b1"), "b1")
	_, err := apply(t, e, h, e.Mut(r, 4, "op-old", 1, "close"), "close")
	wantOutcome(t, err, gate.StaleOwner)
	wantAlarms(t, e, h, r)
	// No proof at all: the querier's HELD admits the current holder.
	mustAccept(t, e, h, withoutStatus(e.Mut(r, 5, "op-b", 2, "b2")), "b2")
	// The registry says the lower grant is HELD: it went backwards.
	heldFence = 4
	_, err = apply(t, e, h, e.Mut(r, 4, "op-old", 1, "close"), "close")
	wantOutcome(t, err, gate.FenceRegression)
	if st := state(t, e, h, r); !st.Paused {
		t.Fatalf("a confirmed regression did not pause: %+v", st)
	}
	wantAlarms(t, e, h, r, gate.AlarmRegression)
}

func withoutStatus(m *gate.Mutation) *gate.Mutation {
	c := *m
	c.Status, c.StatusProof = nil, ""
	return &c
}

func testResume(t T, e *Env) {
	const r = "conf/resume"
	if err := e.H.Resume(e.Ctx, r, 10); !errors.Is(err, gate.ErrResumeRefused) {
		t.Fatalf("resume of a resource that is not paused: %v", err)
	}
	pauseByRegression(t, e, e.H, r)
	if err := e.H.Resume(e.Ctx, r, 5); !errors.Is(err, gate.ErrResumeRefused) {
		t.Fatalf("resume with floor 5 = highestFence: %v", err)
	}
	if st := state(t, e, e.H, r); !st.Paused {
		t.Fatalf("a refused resume unpaused: %+v", st)
	}
	e.Clock.Advance(2 * time.Second) // the repair takes a while
	if err := e.H.Resume(e.Ctx, r, 100); err != nil {
		t.Fatalf("resume: %v", err)
	}
	st := state(t, e, e.H, r)
	if st.Paused || st.PausedReason != "" || st.Floor != 100 || !st.FloorAt.Equal(e.Clock.Now().Truncate(time.Millisecond)) || st.HighestFence != 5 {
		t.Fatalf("resume must store its floor and instant and keep highestFence: %+v", st)
	}
	// The regressed registry's grant is from before the repair: stale, no
	// second pause and no alarm beyond the first.
	_, err := apply(t, e, e.H, e.Iss.Later(time.Second).Mutation(W(r, 3, "op-restored"), 1, "r1"), "r1")
	wantOutcome(t, err, gate.StaleOwner)
	wantAlarms(t, e, e.H, r, gate.AlarmRegression)
	// A grant above the floor from the repaired registry is accepted.
	repaired := e.Iss.Later(3 * time.Second)
	mustAccept(t, e, e.H, repaired.Mutation(W(r, 101, "op-c"), 1, "c1"), "c1")
	// A sub-floor grant issued well after the resume: backwards again.
	_, err = apply(t, e, e.H, e.Iss.Later(10*time.Second).Mutation(W(r, 50, "op-again"), 1, "x"), "x")
	wantOutcome(t, err, gate.FenceRegression)
	if st := state(t, e, e.H, r); !st.Paused || st.HighestFence != 101 || st.Floor != 100 {
		t.Fatalf("state %+v", st)
	}
	wantAlarms(t, e, e.H, r, gate.AlarmRegression, gate.AlarmRegression)
}
