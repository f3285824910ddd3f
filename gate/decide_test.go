// This file proves each fence, segment, replay, status and mode rule of
// Decide, one row per rule, and that no rejection moves highestFence.
package gate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

type fixture struct {
	iss *gatetest.Issuer
	pol *gate.Policy
}

func newFixture(t testing.TB) *fixture {
	iss := gatetest.NewIssuer("main")
	pol := &gate.Policy{Verifier: iss.Verifier}
	if err := pol.Check(); err != nil {
		t.Fatal(err)
	}
	return &fixture{iss, pol}
}

// input authenticates m and builds a decision input at the issuer's clock.
func (f *fixture) input(t *testing.T, m *gate.Mutation, st gate.FenceState, prior *gate.Receipt) gate.Input {
	t.Helper()
	v, err := f.pol.Authenticate(m, owner)
	if err != nil {
		t.Fatal(err)
	}
	in := gate.Input{Verified: v, State: st, Prior: prior, Now: f.iss.Now, StatusSkewMax: f.pol.StatusSkewMax}
	if v.Status != nil {
		in.Status = adapt.EvidenceFromProof(v.Status)
	}
	return in
}

// held is the state after an accept of fence under opID by a grant the
// fixture's issuer made at its clock (gatetest.T0).
func held(fence, last uint64, opID string) gate.FenceState {
	return gate.FenceState{Resource: res, Mode: gate.ModeEnforce, HighestFence: fence, LastSegmentSeq: last,
		Root: grant.OperationRoot(res, opID), GrantIssuedAt: gatetest.T0}
}

func TestDecideRules(t *testing.T) {
	f := newFixture(t)
	w := func(fence uint64, op string) gatetest.Writer {
		return gatetest.Writer{Resource: res, Owner: owner, Lease: "lease-a", OperationID: op, Fence: fence}
	}
	grantOf := func(m *gate.Mutation) grant.Digest {
		g, err := grant.ParseGrant(m.Grant)
		if err != nil {
			t.Fatal(err)
		}
		return g.Digest()
	}
	ownGrant := grantOf(f.iss.Mutation(w(5, "op-a"), 1, "p")) // the grant of every w(5, "op-a") mutation
	otherGrant := grant.OperationRoot(res, "a grant the registry issued before a restore")
	prior := func(fence, seq uint64, op, payload string) *gate.Receipt {
		return &gate.Receipt{Resource: res, FenceToken: fence, SegmentSeq: seq, OperationID: op,
			OperationRoot: grant.OperationRoot(res, op), PayloadDigest: gatetest.Payload(payload),
			GrantDigest: ownGrant, Outcome: gate.Accepted}
	}
	priorOther := prior(5, 2, "op-a", "p")
	priorOther.GrantDigest = otherGrant
	heldByOther := held(5, 2, "op-a")
	heldByOther.GrantDigest = otherGrant
	heldByOwn := held(5, 2, "op-a")
	heldByOwn.GrantDigest = ownGrant
	paused := held(5, 2, "op-a")
	paused.Paused, paused.PausedReason = true, "test"
	policy := held(5, 2, "op-a")
	policy.MinPolicyGeneration = 2
	cases := []struct {
		name  string
		mut   *gate.Mutation
		state gate.FenceState
		prior *gate.Receipt
		want  gate.Outcome
		also  error
	}{
		{"first write", f.iss.Mutation(w(5, "op-a"), 1, "p"), held(0, 0, ""), nil, gate.Accepted, nil},
		{"next segment", f.iss.Mutation(w(5, "op-a"), 3, "p"), held(5, 2, "op-a"), nil, gate.Accepted, nil},
		{"larger fence seq 1", f.iss.Mutation(w(6, "op-b"), 1, "p"), held(5, 2, "op-a"), nil, gate.Accepted, nil},
		{"larger fence seq != 1", f.iss.Mutation(w(6, "op-b"), 2, "p"), held(5, 2, "op-a"), nil, gate.SegmentGap, nil},
		{"skipped seq", f.iss.Mutation(w(5, "op-a"), 4, "p"), held(5, 2, "op-a"), nil, gate.SegmentGap, nil},
		{"seq going back without receipt", f.iss.Mutation(w(5, "op-a"), 2, "p"), held(5, 2, "op-a"), nil, gate.SegmentGap, nil},
		{"equal fence other root", f.iss.Mutation(w(5, "op-z"), 3, "p"), held(5, 2, "op-a"), nil, gate.FenceRegression, gate.ErrRootMismatch},
		{"smaller fence, not held", f.iss.WithStatus(f.iss.Mutation(w(4, "op-a"), 1, "p"), grant.StateExpired), held(5, 2, "op-a"), nil, gate.StaleOwner, nil},
		{"smaller fence, no status", gatetest.WithoutStatus(f.iss.Mutation(w(4, "op-a"), 1, "p")), held(5, 2, "op-a"), nil, gate.StaleOwner, nil},
		{"smaller fence proven held, proof after the grant at highest = regression", f.iss.Later(time.Second).WithStatus(f.iss.Mutation(w(4, "op-a"), 1, "p"), grant.StateHeld), held(5, 2, "op-a"), nil, gate.FenceRegression, gate.ErrStaleOwner},
		{"smaller fence proven held, proof before the grant at highest = stale", f.iss.Later(-time.Second).Mutation(w(4, "op-a"), 1, "p"), held(5, 2, "op-a"), nil, gate.StaleOwner, nil},
		{"replay same payload", f.iss.WithStatus(f.iss.Mutation(w(5, "op-a"), 2, "p"), grant.StateExpired), held(5, 2, "op-a"), prior(5, 2, "op-a", "p"), gate.Replayed, nil},
		{"replay other payload", f.iss.Mutation(w(5, "op-a"), 2, "q"), held(5, 2, "op-a"), prior(5, 2, "op-a", "p"), gate.Quarantined, nil},
		{"replay under a re-issued grant = regression", f.iss.Mutation(w(5, "op-a"), 2, "p"), held(5, 2, "op-a"), priorOther, gate.FenceRegression, gate.ErrRootMismatch},
		{"re-issued grant, not held = still regression", f.iss.WithStatus(f.iss.Mutation(w(5, "op-a"), 2, "p"), grant.StateExpired), held(5, 2, "op-a"), priorOther, gate.FenceRegression, gate.ErrRootMismatch},
		{"equal fence, another grant's state = regression", f.iss.Mutation(w(5, "op-a"), 3, "p"), heldByOther, nil, gate.FenceRegression, gate.ErrRootMismatch},
		{"equal fence, own grant's state", f.iss.Mutation(w(5, "op-a"), 3, "p"), heldByOwn, nil, gate.Accepted, nil},
		{"paused", f.iss.Mutation(w(6, "op-b"), 1, "p"), paused, nil, gate.ResourcePaused, nil},
		{"paused but exact replay", f.iss.Mutation(w(5, "op-a"), 2, "p"), paused, prior(5, 2, "op-a", "p"), gate.Replayed, nil},
		{"policy stale", f.iss.Mutation(w(6, "op-b"), 1, "p"), policy, nil, gate.PolicyStale, nil},
		{"status expired state", f.iss.WithStatus(f.iss.Mutation(w(6, "op-b"), 1, "p"), grant.StateExpired), held(5, 2, "op-a"), nil, gate.NotHeld, nil},
		{"status released", f.iss.WithStatus(f.iss.Mutation(w(6, "op-b"), 1, "p"), grant.StateReleased), held(5, 2, "op-a"), nil, gate.NotHeld, nil},
		{"status revoked", f.iss.WithStatus(f.iss.Mutation(w(6, "op-b"), 1, "p"), grant.StateRevoked), held(5, 2, "op-a"), nil, gate.NotHeld, nil},
		{"no status at all", gatetest.WithoutStatus(f.iss.Mutation(w(6, "op-b"), 1, "p")), held(5, 2, "op-a"), nil, gate.NotHeld, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := gate.Decide(f.input(t, c.mut, c.state, c.prior))
			if d.Outcome != c.want {
				t.Fatalf("outcome %s, want %s (%v)", d.Outcome, c.want, d.Err)
			}
			if c.also != nil && !errors.Is(d.Err, c.also) {
				t.Fatalf("%v does not also match %v", d.Err, c.also)
			}
			if c.want == gate.Accepted {
				if d.Err != nil || !d.Store || !d.Proceed || d.State.HighestFence != c.mut.FenceToken || d.State.LastSegmentSeq != c.mut.SegmentSeq || d.State.GrantDigest != grantOf(c.mut) {
					t.Fatalf("accept: %+v", d)
				}
				return
			}
			if !errors.Is(d.Err, c.want.Err()) || gate.OutcomeOf(d.Err) != c.want {
				t.Fatalf("err %v does not match %s", d.Err, c.want)
			}
			if d.Proceed || d.State.HighestFence != c.state.HighestFence || d.State.LastSegmentSeq != c.state.LastSegmentSeq || d.State.Root != c.state.Root {
				t.Fatalf("rejection changed state or proceeds: %+v", d)
			}
		})
	}
}

func TestDecideRegressionPausesAndAlarms(t *testing.T) {
	f := newFixture(t)
	restated := f.iss.Later(time.Second).WithStatus(f.iss.Mutation(writerA(4), 1, "p"), grant.StateHeld)
	d := gate.Decide(f.input(t, restated, held(5, 2, "op-a"), nil))
	if d.Outcome != gate.FenceRegression || !d.Alarm || d.AlarmKind != gate.AlarmRegression || !d.Store || !d.State.Paused || d.State.HighestFence != 5 {
		t.Fatalf("%+v", d)
	}
	if r := d.Err.(*gate.Rejection); !r.Recorded {
		t.Fatal("regression must say it recorded an alarm")
	}
	resumed, err := gate.Resume(d.State, 5, f.iss.Now)
	if !errors.Is(err, gate.ErrResumeRefused) || !resumed.Paused {
		t.Fatalf("resume with floor == highest: %v", err)
	}
	resumed, err = gate.Resume(d.State, 6, f.iss.Now)
	if err != nil || resumed.Paused || resumed.HighestFence != 5 || resumed.Floor != 6 || !resumed.FloorAt.Equal(f.iss.Now) {
		t.Fatalf("resume with floor 6: %+v %v", resumed, err)
	}
}

func TestDecideProofFreshness(t *testing.T) {
	f := newFixture(t)
	in := f.input(t, f.iss.Mutation(writerA(6), 1, "p"), held(5, 2, "op-a"), nil)
	validUntil := f.iss.Now.Add(f.iss.StatusValidFor)
	for _, c := range []struct {
		now  time.Time
		want gate.Outcome
	}{
		{validUntil.Add(-f.pol.StatusSkewMax - time.Millisecond), gate.Accepted},
		{validUntil.Add(-f.pol.StatusSkewMax), gate.ProofExpired},
		{validUntil.Add(time.Hour), gate.ProofExpired},
	} {
		in.Now = c.now
		if d := gate.Decide(in); d.Outcome != c.want {
			t.Errorf("now %s: %s, want %s", c.now, d.Outcome, c.want)
		}
	}
}

func TestDecideQueryEvidence(t *testing.T) {
	f := newFixture(t)
	in := f.input(t, gatetest.WithoutStatus(f.iss.Mutation(writerA(6), 1, "p")), held(5, 2, "op-a"), nil)
	for _, c := range []struct {
		ev   gate.StatusEvidence
		want gate.Outcome
	}{
		{adapt.EvidenceFromQuery(grant.StateHeld, 7, nil, 0), gate.Accepted},
		{adapt.EvidenceFromQuery(grant.StateHeld, 7, nil, 8), gate.EpochRevoked},
		{adapt.EvidenceFromQuery("", 0, errors.New("registry unreachable"), 0), gate.NotHeld},
		{adapt.EvidenceFromQuery(grant.StateExpired, 7, nil, 0), gate.NotHeld},
	} {
		in.Status = c.ev
		if d := gate.Decide(in); d.Outcome != c.want {
			t.Errorf("%+v: %s, want %s", c.ev, d.Outcome, c.want)
		}
	}
}

func TestDecideShadowNeverRejects(t *testing.T) {
	f := newFixture(t)
	st := held(5, 2, "op-a")
	st.Mode = gate.ModeShadow
	restated := f.iss.Later(time.Second).WithStatus(f.iss.Mutation(writerA(4), 1, "p"), grant.StateHeld)
	d := gate.Decide(f.input(t, restated, st, nil))
	if d.Outcome != gate.FenceRegression || !d.Proceed || !d.ShadowLog || !d.Alarm || d.Store || d.State.Paused {
		t.Fatalf("shadow regression: %+v", d)
	}
	d = gate.Decide(f.input(t, f.iss.Mutation(writerA(6), 1, "p"), st, nil))
	if d.Outcome != gate.Accepted || !d.Store || d.Receipt.Mode != gate.ModeShadow {
		t.Fatalf("shadow accept: %+v", d)
	}
}

func TestChangeModeIsOneWay(t *testing.T) {
	if m, err := gate.ChangeMode(gate.ModeShadow, gate.ModeEnforce); err != nil || m != gate.ModeEnforce {
		t.Fatal(m, err)
	}
	for _, to := range []gate.Mode{gate.ModeShadow, "off", ""} {
		if m, err := gate.ChangeMode(gate.ModeEnforce, to); !errors.Is(err, gate.ErrModeDowngrade) || m != gate.ModeEnforce {
			t.Errorf("enforce → %q: %v %v", to, m, err)
		}
	}
}

func TestJudgeVerdicts(t *testing.T) {
	r := []gate.Receipt{{Resource: res, FenceToken: 5}}
	for _, c := range []struct {
		receipts       []gate.Receipt
		highest, fence uint64
		want           gate.Verdict
	}{
		{r, 9, 5, gate.VerdictAccepted},
		{nil, 6, 5, gate.VerdictProvenAbsent},
		{nil, 5, 5, gate.VerdictUndetermined},
		{nil, 0, 5, gate.VerdictUndetermined},
	} {
		if a := gate.Judge(c.receipts, c.highest, c.fence); a.Verdict != c.want {
			t.Errorf("%+v: %s", c, a.Verdict)
		}
	}
}
