package conformance

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// This file holds the grant's own HELD statement (lockGrant.v1 with
// heldUntil) as every adapter must judge it: a fresh held-form grant
// without a status proof is HELD evidence until heldUntil minus the skew
// bound, exactly as a proof would be; a status proof in the mutation wins;
// a querier is asked once the statement has run out; an earlier-form grant
// without a proof proves nothing.

// heldUntilOf returns the held statement's bound of m's grant.
func heldUntilOf(t T, m *gate.Mutation) time.Time {
	t.Helper()
	g := grantOf(t, m)
	if !g.HeldStatement() {
		t.Fatalf("fixture: grant without a held statement")
	}
	return g.HeldUntil
}

func testGrantHeld(t T, e *Env) {
	const r = "conf/held"
	m1 := e.Iss.HeldMutation(W(r, 5, "op-a"), 1, "a1")
	mustAccept(t, e, e.H, m1, "a1")
	// At heldUntil (whatever the skew bound, now + skew is not before
	// it) the statement no longer proves HELD, though the lease has not
	// expired: PROOF_EXPIRED, and nothing changes.
	e.Clock.Advance(heldUntilOf(t, m1).Sub(e.Clock.Now()))
	before := snap(t, e, e.H, r)
	m2 := e.Iss.HeldMutation(W(r, 5, "op-a"), 2, "a2")
	_, err := apply(t, e, e.H, m2, "a2")
	wantOutcome(t, err, gate.ProofExpired)
	unchanged(t, e, e.H, r, before, "a write past its grant's held statement")
	// A renewal's status proof in the mutation is newer evidence and wins.
	renewed := e.Iss.Later(3*time.Second).WithStatus(m2, grant.StateHeld)
	mustAccept(t, e, e.H, renewed, "a2")
	// So does a proof that says the grant ended, fresh held statement or not.
	m3 := e.Iss.Later(4*time.Second).WithStatus(e.Iss.Later(4*time.Second).HeldMutation(W(r, 6, "op-b"), 1, "b1"), grant.StateReleased)
	_, err = apply(t, e, e.H, m3, "b1")
	wantOutcome(t, err, gate.NotHeld)
}

// testGrantHeldQuerier: with a querier, a held statement that ran out is
// settled by the registry's word, as a mutation without any proof is.
func testGrantHeldQuerier(t T, e *Env) {
	const r = "conf/held-querier"
	state := grant.StateReleased
	h := e.WithQuerier(gate.QuerierFunc(func(context.Context, *grant.Grant) (grant.State, uint64, error) {
		return state, e.Iss.Epoch, nil
	}))
	m := e.Iss.HeldMutation(W(r, 5, "op-a"), 1, "a1")
	mustAccept(t, e, h, m, "a1") // fresh: the statement suffices, whatever the registry would say
	e.Clock.Advance(heldUntilOf(t, m).Sub(e.Clock.Now()))
	m2 := e.Iss.HeldMutation(W(r, 5, "op-a"), 2, "a2")
	_, err := apply(t, e, h, m2, "a2")
	wantOutcome(t, err, gate.NotHeld)
	state = grant.StateHeld
	mustAccept(t, e, h, m2, "a2")
}

func testOldGrantNotHeld(t T, e *Env) {
	const r = "conf/held-old"
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	before := snap(t, e, e.H, r)
	_, err := apply(t, e, e.H, gatetest.WithoutStatus(e.Mut(r, 5, "op-a", 2, "a2")), "a2")
	wantOutcome(t, err, gate.NotHeld)
	unchanged(t, e, e.H, r, before, "an earlier-form grant without status or querier")
}

// testGrantHeldRegression: the regression rule reads a held statement's
// issue time as it reads a proof's. A lower fence whose held-form grant a
// restored registry issued a second after the grant at highest is a
// proven regression; one issued a second before it is a late write.
func testGrantHeldRegression(t T, e *Env) {
	const r = "conf/held-regression"
	mustAccept(t, e, e.H, e.Iss.HeldMutation(W(r, 5, "op-a"), 1, "a1"), "a1")
	before := snap(t, e, e.H, r)
	late := e.Iss.Later(-time.Second).HeldMutation(W(r, 4, "op-old"), 1, "late")
	_, err := apply(t, e, e.H, late, "late")
	wantOutcome(t, err, gate.StaleOwner)
	unchanged(t, e, e.H, r, before, "a late held-form grant")
	restored := e.Iss.Later(time.Second).HeldMutation(W(r, 3, "op-restored"), 1, "r1")
	_, err = apply(t, e, e.H, restored, "r1")
	wantOutcome(t, err, gate.FenceRegression)
	if st := state(t, e, e.H, r); !st.Paused || st.HighestFence != 5 {
		t.Fatalf("a held-form grant issued after the grant at highest did not pause: %+v", st)
	}
	wantAlarms(t, e, e.H, r, gate.AlarmRegression)
}
