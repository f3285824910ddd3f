package conformance

import (
	"errors"
	"slices"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// This file holds the single-writer rules: accept, next segment, gap,
// stale, replay, quarantine, policy generation, authentication failures
// and a failing business change.

func testAccept(t T, e *Env) {
	const r = "conf/accept"
	m := e.Mut(r, 5, "op-a", 1, "a1")
	rc := mustAccept(t, e, e.H, m, "a1")
	g := grantOf(t, m)
	if rc.Resource != r || rc.FenceToken != 5 || rc.SegmentSeq != 1 || rc.OperationID != "op-a" ||
		rc.PayloadDigest != m.PayloadDigest || rc.GrantDigest != g.Digest() || rc.OperationRoot != g.OperationRoot ||
		rc.Outcome != gate.Accepted || rc.Mode != gate.ModeEnforce || !rc.AcceptedAt.Equal(e.Clock.Now().Truncate(time.Millisecond)) {
		t.Fatalf("receipt %+v", rc)
	}
	st := state(t, e, e.H, r)
	want := gate.FenceState{Resource: r, Mode: gate.ModeEnforce, HighestFence: 5, Root: g.OperationRoot, LastSegmentSeq: 1,
		GrantDigest: g.Digest(), GrantIssuedAt: g.IssuedAt}
	if !sameState(st, want) {
		t.Fatalf("stored state\n %+v\nwant\n %+v", st, want)
	}
	if fx := effects(t, e, e.H, r); !slices.Equal(fx, []string{"a1"}) {
		t.Fatalf("effects %q", fx)
	}
	if rs := records(t, e, e.H, r); !sameRecords(rs, Records{}) {
		t.Fatalf("an accept recorded %+v", rs)
	}
}

func testNextSegment(t T, e *Env) {
	const r = "conf/next"
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	rc := mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 2, "a2"), "a2")
	if rc.SegmentSeq != 2 {
		t.Fatalf("receipt %+v", rc)
	}
	if st := state(t, e, e.H, r); st.HighestFence != 5 || st.LastSegmentSeq != 2 {
		t.Fatalf("state %+v", st)
	}
	// A higher fence starts over at segment 1.
	mustAccept(t, e, e.H, e.Mut(r, 7, "op-b", 1, "b1"), "b1")
	if st := state(t, e, e.H, r); st.HighestFence != 7 || st.LastSegmentSeq != 1 || st.Root != grant.OperationRoot(r, "op-b") {
		t.Fatalf("state %+v", st)
	}
	if fx := effects(t, e, e.H, r); !slices.Equal(fx, []string{"a1", "a2", "b1"}) {
		t.Fatalf("effects %q", fx)
	}
}

func testSegmentGap(t T, e *Env) {
	const r = "conf/gap"
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	before := snap(t, e, e.H, r)
	for _, m := range []*gate.Mutation{e.Mut(r, 5, "op-a", 3, "a3"), e.Mut(r, 6, "op-b", 2, "b2")} {
		_, err := apply(t, e, e.H, m, "gap")
		wantOutcome(t, err, gate.SegmentGap)
		unchanged(t, e, e.H, r, before, "a segment gap")
	}
}

func testStale(t T, e *Env) {
	const r = "conf/stale"
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	before := snap(t, e, e.H, r)
	for _, st := range []grant.State{grant.StateExpired, grant.StateReleased} {
		m := e.Iss.WithStatus(e.Mut(r, 4, "op-old", 1, "old"), st)
		_, err := apply(t, e, e.H, m, "old")
		wantOutcome(t, err, gate.StaleOwner)
		if !errors.Is(err, gate.ErrStaleOwner) {
			t.Fatalf("not errors.Is STALE_OWNER: %v", err)
		}
		unchanged(t, e, e.H, r, before, "a stale write")
	}
}

func testReplay(t T, e *Env) {
	const r = "conf/replay"
	m1 := e.Mut(r, 5, "op-a", 1, "a1")
	first := mustAccept(t, e, e.H, m1, "a1")
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 2, "a2"), "a2")
	before := snap(t, e, e.H, r)
	// The same envelope again (a lost ACK), and a later copy with a newer
	// proof: both return the original receipt and change nothing.
	for _, m := range []*gate.Mutation{m1, e.Iss.Later(time.Second).WithStatus(m1, grant.StateHeld)} {
		rc, err := apply(t, e, e.H, m, "a1")
		wantOutcome(t, err, gate.Replayed)
		if !gate.IsSuccess(err) || rc.ID() != first.ID() {
			t.Fatalf("replay returned receipt %s, original %s", rc.ID(), first.ID())
		}
		unchanged(t, e, e.H, r, before, "a replay")
	}
}

func testQuarantine(t T, e *Env) {
	const r = "conf/quarantine"
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	before := snap(t, e, e.H, r)
	_, err := apply(t, e, e.H, e.Mut(r, 5, "op-a", 1, "evil"), "evil")
	wantOutcome(t, err, gate.Quarantined)
	if rs := records(t, e, e.H, r); rs.Quarantined != 1 {
		t.Fatalf("quarantine entries %d, want 1", rs.Quarantined)
	}
	before.Records.Quarantined = 1
	unchanged(t, e, e.H, r, before, "a quarantined payload")
}

func testPolicyStale(t T, e *Env) {
	const r = "conf/policy"
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	if err := e.H.SetMinPolicyGeneration(e.Ctx, r, 2); err != nil {
		t.Fatalf("set min policy generation: %v", err)
	}
	before := snap(t, e, e.H, r)
	if before.State.MinPolicyGeneration != 2 {
		t.Fatalf("minimum policy generation not stored: %+v", before.State)
	}
	_, err := apply(t, e, e.H, e.Mut(r, 6, "op-b", 1, "b1"), "b1")
	wantOutcome(t, err, gate.PolicyStale)
	unchanged(t, e, e.H, r, before, "a stale policy generation")
	w := W(r, 6, "op-b")
	w.PolicyGeneration = 2
	mustAccept(t, e, e.H, e.Iss.Mutation(w, 1, "b1"), "b1")
}

// testAuthFailures: every authentication failure, on a resource with
// state and on one the gate never saw, changes nothing at all.
func testAuthFailures(t T, e *Env) {
	const r, fresh = "conf/auth", "conf/auth-fresh"
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	revoked := gatetest.NewIssuer("conformance")
	revoked.Epoch = RevokedBelow - 1
	forger := gatetest.NewIssuer("forger")
	rows := []struct {
		name   string
		mut    func(res string) *gate.Mutation
		caller string
		want   gate.Outcome
	}{
		{"forged", func(res string) *gate.Mutation { return forger.Mutation(W(res, 1000, "op-f"), 1, "f") }, Owner, gate.BadProof},
		{"tampered", func(res string) *gate.Mutation {
			m := e.Mut(res, 6, "op-f", 1, "f")
			m.Grant[len(m.Grant)-3] ^= 1
			return m
		}, Owner, gate.BadProof},
		{"identity", func(res string) *gate.Mutation { return e.Mut(res, 6, "op-f", 1, "f") }, "worker-b", gate.IdentityMismatch},
		{"cross-resource", func(res string) *gate.Mutation {
			m := e.Mut("conf/elsewhere", 6, "op-f", 1, "f")
			m.Resource = res
			return m
		}, Owner, gate.BindingMismatch},
		{"revoked epoch", func(res string) *gate.Mutation { return revoked.Mutation(W(res, 6, "op-f"), 1, "f") }, Owner, gate.EpochRevoked},
		{"malformed", func(res string) *gate.Mutation {
			m := e.Mut(res, 6, "op-f", 1, "f")
			m.SegmentSeq = 0
			return m
		}, Owner, gate.Malformed},
		{"forged huge fence", func(res string) *gate.Mutation {
			m := e.Mut(res, 6, "op-f", 1, "f")
			m.FenceToken = 1 << 40
			return m
		}, Owner, gate.BindingMismatch},
	}
	for _, res := range []string{r, fresh} {
		before := snap(t, e, e.H, res)
		for _, row := range rows {
			_, err := e.H.Apply(e.Ctx, row.caller, row.mut(res), "f")
			if got := gate.OutcomeOf(err); got != row.want {
				t.Fatalf("%s on %s: outcome %q (%v), want %s", row.name, res, got, err, row.want)
			}
			unchanged(t, e, e.H, res, before, row.name+" on "+res)
		}
	}
}

func testBusinessFailure(t T, e *Env) {
	const r = "conf/business"
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 1, "a1"), "a1")
	before := snap(t, e, e.H, r)
	m := e.Mut(r, 5, "op-a", 2, FailPayload)
	_, err := apply(t, e, e.H, m, FailPayload)
	if err == nil || gate.OutcomeOf(err) != "" || !errors.Is(err, ErrBusinessFailed) {
		t.Fatalf("a failed business change must return its error, not an outcome: %v", err)
	}
	unchanged(t, e, e.H, r, before, "a failed business change")
	// No receipt was left at (5, 2): another payload there is accepted,
	// not quarantined.
	mustAccept(t, e, e.H, e.Mut(r, 5, "op-a", 2, "a2"), "a2")
}
