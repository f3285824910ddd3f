// This file proves the regression rule: a lower fence is FENCE_REGRESSION
// (alarm and pause) only on proof that the registry went backwards, an
// ordinary STALE_OWNER otherwise, and a suspected regression (alarm, no
// pause) where the evidence cannot tell; the floor of a Resume keeps grants
// from before the repair from pausing again. The old rule (pause on any
// lower fence proven HELD) is the negative control: it pauses on the late
// copy this file's first row is about.
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

func TestRegressionRule(t *testing.T) {
	f := newFixture(t)
	lower := func(i *gatetest.Issuer) *gate.Mutation { return i.Mutation(writerA(4), 1, "p") }
	restated := func(d time.Duration) *gate.Mutation {
		return f.iss.Later(d).WithStatus(lower(f.iss), grant.StateHeld)
	}
	unknownIssue := held(5, 2, "op-a")
	unknownIssue.GrantIssuedAt = time.Time{}
	resumed := held(5, 2, "op-a")
	resumed.Floor, resumed.FloorAt = 9, gatetest.T0
	queryHeld := adapt.EvidenceFromQuery(grant.StateHeld, gatetest.Epoch, nil, 0)
	queryReleased := adapt.EvidenceFromQuery(grant.StateReleased, gatetest.Epoch, nil, 0)
	queryFailed := adapt.EvidenceFromQuery("", 0, errors.New("registry unreachable"), 0)
	cases := []struct {
		name    string
		mut     *gate.Mutation
		state   gate.FenceState
		status  *gate.StatusEvidence // replaces the proof's evidence
		confirm *gate.StatusEvidence
		want    gate.Outcome
		alarm   gate.AlarmKind // "" = none
		ask     bool           // Decision.Confirm
	}{
		{"late copy: proof issued before the grant at highest", lower(f.iss.Later(-time.Second)), held(5, 2, "op-a"), nil, nil, gate.StaleOwner, "", false},
		{"proof issued after the grant at highest", restated(time.Second), held(5, 2, "op-a"), nil, nil, gate.FenceRegression, gate.AlarmRegression, false},
		{"proof just past the bound after", restated(gate.StatusSkewMaxDefault + time.Millisecond), held(5, 2, "op-a"), nil, nil, gate.FenceRegression, gate.AlarmRegression, false},
		{"proof exactly the bound before", restated(-gate.StatusSkewMaxDefault), held(5, 2, "op-a"), nil, nil, gate.StaleOwner, "", false},
		{"proof inside the bound: ask", lower(f.iss), held(5, 2, "op-a"), nil, nil, gate.StaleOwner, gate.AlarmSuspected, true},
		{"proof at the bound after: ask", restated(gate.StatusSkewMaxDefault), held(5, 2, "op-a"), nil, nil, gate.StaleOwner, gate.AlarmSuspected, true},
		{"inside the bound, registry says HELD", lower(f.iss), held(5, 2, "op-a"), nil, &queryHeld, gate.FenceRegression, gate.AlarmRegression, false},
		{"inside the bound, registry says RELEASED", lower(f.iss), held(5, 2, "op-a"), nil, &queryReleased, gate.StaleOwner, "", false},
		{"inside the bound, registry unreachable", lower(f.iss), held(5, 2, "op-a"), nil, &queryFailed, gate.StaleOwner, gate.AlarmSuspected, false},
		{"highest grant's issue time unknown", restated(time.Hour / 2), unknownIssue, nil, nil, gate.StaleOwner, gate.AlarmSuspected, true},
		{"lower fence, proof expired", f.iss.Later(-time.Minute).Mutation(writerA(4), 1, "p"), held(5, 2, "op-a"), nil, nil, gate.StaleOwner, "", false},
		{"lower fence, status RELEASED", f.iss.WithStatus(lower(f.iss), grant.StateReleased), held(5, 2, "op-a"), nil, nil, gate.StaleOwner, "", false},
		{"lower fence, query says HELD", gatetest.WithoutStatus(lower(f.iss)), held(5, 2, "op-a"), &queryHeld, nil, gate.FenceRegression, gate.AlarmRegression, false},
		{"lower fence, query says RELEASED", gatetest.WithoutStatus(lower(f.iss)), held(5, 2, "op-a"), &queryReleased, nil, gate.StaleOwner, "", false},
		{"below the floor, grant from before the resume", lower(f.iss.Later(-time.Second)), resumed, nil, nil, gate.StaleOwner, "", false},
		{"below the floor, grant issued after the resume", f.iss.Later(time.Second).Mutation(writerA(8), 1, "p"), resumed, nil, nil, gate.FenceRegression, gate.AlarmRegression, false},
		{"at the floor, grant inside the bound of the resume", f.iss.Mutation(writerA(9), 1, "p"), resumed, nil, nil, gate.StaleOwner, gate.AlarmSuspected, false},
		{"below the floor, the grant at highest again", f.iss.Later(time.Second).Mutation(writerA(5), 3, "p"), resumed, nil, nil, gate.FenceRegression, gate.AlarmRegression, false},
		{"above the floor", f.iss.Later(time.Second).Mutation(writerA(10), 1, "p"), resumed, nil, nil, gate.Accepted, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := f.input(t, c.mut, c.state, nil)
			in.Now = gatetest.T0.Add(time.Second)
			if c.status != nil {
				in.Status = *c.status
			}
			in.Confirm = c.confirm
			d := gate.Decide(in)
			if d.Outcome != c.want || d.Alarm != (c.alarm != "") || d.AlarmKind != c.alarm || d.Confirm != c.ask {
				t.Fatalf("got %s alarm %v %q confirm %v (%v); want %s alarm %q confirm %v",
					d.Outcome, d.Alarm, d.AlarmKind, d.Confirm, d.Err, c.want, c.alarm, c.ask)
			}
			pauses := c.want == gate.FenceRegression
			if d.State.Paused != pauses || d.Store != (pauses || c.want == gate.Accepted) {
				t.Fatalf("paused %v store %v, want pause %v", d.State.Paused, d.Store, pauses)
			}
			if c.want != gate.Accepted && (d.State.HighestFence != c.state.HighestFence || !errors.Is(d.Err, gate.ErrStaleOwner)) {
				t.Fatalf("a lower fence must stay STALE_OWNER for errors.Is and keep highestFence: %v %+v", d.Err, d.State)
			}
			if c.alarm != "" && !d.Err.(*gate.Rejection).Recorded {
				t.Fatal("an alarm must be reported as recorded")
			}
		})
	}
}

// TestOldRulePausesOnALateCopy is the negative control: the rule before
// this one ("a lower fence proven HELD is a regression") pauses the
// resource on the late copy that TestRegressionRule's first row accepts
// as STALE_OWNER. The proof in that copy is fresh and says HELD.
func TestOldRulePausesOnALateCopy(t *testing.T) {
	f := newFixture(t)
	in := f.input(t, f.iss.Later(-time.Second).Mutation(writerA(4), 1, "p"), held(5, 2, "op-a"), nil)
	in.Now = gatetest.T0.Add(time.Second)
	if !in.Status.ProvesHeld(in.Now, in.StatusSkewMax) {
		t.Fatal("the late copy's proof must still look fresh, or this control shows nothing")
	}
	oldRule := in.Verified.Mutation.FenceToken < in.State.HighestFence && in.Status.ProvesHeld(in.Now, in.StatusSkewMax)
	if !oldRule {
		t.Fatal("the old rule would not have paused")
	}
	if d := gate.Decide(in); d.State.Paused || d.Outcome != gate.StaleOwner || d.Alarm {
		t.Fatalf("the new rule must reject without alarm or pause: %+v", d)
	}
}

// TestHigherFenceIssuedBefore proves the rule's last kind of proof: a
// fence above highestFence whose grant was issued more than the skew bound
// before the grant at highestFence means the registry issued the lower
// fence after the higher one — FENCE_REGRESSION and a pause, whatever its
// status proof says. Inside the bound, or with the highest grant's issue
// time unknown, it is an ordinary accept (the rows that must not pause).
func TestHigherFenceIssuedBefore(t *testing.T) {
	f := newFixture(t)
	higher := func(d time.Duration) *gate.Mutation { return f.iss.Later(d).Mutation(writerA(6), 1, "p") }
	unknownIssue := held(5, 2, "op-a")
	unknownIssue.GrantIssuedAt = time.Time{}
	bound := gate.StatusSkewMaxDefault
	cases := []struct {
		name  string
		mut   *gate.Mutation
		state gate.FenceState
		want  gate.Outcome
	}{
		{"issued well before the grant at highest", higher(-5 * time.Second), held(5, 2, "op-a"), gate.FenceRegression},
		{"issued just past the bound before", higher(-bound - time.Millisecond), held(5, 2, "op-a"), gate.FenceRegression},
		{"issued exactly the bound before: two replicas' clocks", higher(-bound), held(5, 2, "op-a"), gate.Accepted},
		{"issued inside the bound before", higher(-bound + time.Millisecond), held(5, 2, "op-a"), gate.Accepted},
		{"issued after", higher(time.Millisecond), held(5, 2, "op-a"), gate.Accepted},
		{"highest grant's issue time unknown", higher(-time.Hour), unknownIssue, gate.Accepted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := f.input(t, c.mut, c.state, nil)
			in.Now = gatetest.T0.Add(time.Second)
			if c.want == gate.Accepted {
				// An accept needs a fresh proof; the regression rows must
				// not, so they keep the grant's own (possibly stale) one.
				in.Status = adapt.EvidenceFromQuery(grant.StateHeld, gatetest.Epoch, nil, 0)
			}
			d := gate.Decide(in)
			if d.Outcome != c.want {
				t.Fatalf("got %s (%v), want %s", d.Outcome, d.Err, c.want)
			}
			if c.want != gate.FenceRegression {
				if d.Alarm || d.State.Paused {
					t.Fatalf("an ordinary accept raised an alarm or paused: %+v", d)
				}
				return
			}
			if !d.Alarm || d.AlarmKind != gate.AlarmRegression || !d.State.Paused || !d.Store || d.Proceed {
				t.Fatalf("want alarm, pause, stored state and no business change: %+v", d)
			}
			if d.State.HighestFence != c.state.HighestFence || !errors.Is(d.Err, gate.ErrFenceRegression) {
				t.Fatalf("highestFence must stay %d and the error match FENCE_REGRESSION: %v %+v", c.state.HighestFence, d.Err, d.State)
			}
		})
	}
}
