// This file proves each rule of DecideJob, one row per rule: a job is
// authorised by its upstream receipt (not by a status proof), a job of a
// superseded owner is STALE_OWNER at the target, jobs apply in order, a
// re-run replays; and that no rejection moves the target's highestFence.
package gate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

const hop = "mirror"

// jobOf builds the job that fence's accept of segment seg enqueued as its
// jobSeq-th job, and the upstream receipt it names.
func jobOf(t testing.TB, f *fixture, fence, seg, jobSeq uint64, op, payload string) (*gate.Job, *gate.Receipt) {
	t.Helper()
	m := f.iss.Mutation(gatetest.Writer{Resource: res, Owner: owner, Lease: "lease-a", OperationID: op, Fence: fence}, seg, "upstream")
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		t.Fatal(err)
	}
	up := &gate.Receipt{Resource: res, FenceToken: fence, OperationRoot: g.OperationRoot, OperationID: op, SegmentSeq: seg,
		PayloadDigest: m.PayloadDigest, GrantDigest: g.Digest(), AcceptedAt: gatetest.T0, Mode: gate.ModeEnforce, Outcome: gate.Accepted}
	target, err := gate.JobTarget(res, hop)
	if err != nil {
		t.Fatal(err)
	}
	return &gate.Job{Target: target, Resource: res, OperationID: op, FenceToken: fence, SegmentSeq: seg, JobSeq: jobSeq,
		PayloadDigest: gatetest.Payload(payload), UpstreamReceipt: up.Digest(), Grant: m.Grant, GrantProof: m.GrantProof}, up
}

func targetState(t *testing.T, fence, last uint64, op string) gate.FenceState {
	target, _ := gate.JobTarget(res, hop)
	return gate.FenceState{Resource: target, Mode: gate.ModeEnforce, HighestFence: fence, LastSegmentSeq: last,
		Root: grant.OperationRoot(res, op)}
}

func TestDecideJobRules(t *testing.T) {
	f := newFixture(t)
	// The target has applied jobs 1–2 of fence 5 (op-a). Every job is run
	// a minute after its upstream accept: every status proof has expired.
	later := f.iss.Now.Add(time.Minute)
	applied, _ := jobOf(t, f, 5, 1, 2, "op-a", "j2")
	v2, err := f.pol.AuthenticateJob(applied, hop)
	if err != nil {
		t.Fatal(err)
	}
	prior2 := gate.Receipt{Resource: applied.Target, FenceToken: 5, OperationRoot: v2.Root, OperationID: "op-a", SegmentSeq: 2,
		PayloadDigest: applied.PayloadDigest, GrantDigest: v2.GrantDigest, Mode: gate.ModeEnforce, Outcome: gate.Accepted}
	rows := []struct {
		name  string
		job   func() (*gate.Job, *gate.Receipt)
		prior *gate.Receipt
		state gate.FenceState
		want  gate.Outcome
	}{
		{"next job, proofs long expired: accepted on the upstream receipt", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 5, 2, 3, "op-a", "j3") }, nil, targetState(t, 5, 2, "op-a"), gate.Accepted},
		{"newer owner's first job", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 6, 1, 1, "op-b", "b1") }, nil, targetState(t, 5, 2, "op-a"), gate.Accepted},
		{"superseded owner's late job", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 4, 3, 1, "op-old", "old") }, nil, targetState(t, 5, 2, "op-a"), gate.StaleOwner},
		{"job skipped ahead", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 5, 2, 4, "op-a", "j4") }, nil, targetState(t, 5, 2, "op-a"), gate.SegmentGap},
		{"newer owner's second job before its first", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 6, 1, 2, "op-b", "b2") }, nil, targetState(t, 5, 2, "op-a"), gate.SegmentGap},
		{"re-run of an applied job", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 5, 1, 2, "op-a", "j2") }, &prior2, targetState(t, 5, 2, "op-a"), gate.Replayed},
		{"re-run with another payload", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 5, 1, 2, "op-a", "evil") }, &prior2, targetState(t, 5, 2, "op-a"), gate.Quarantined},
		{"equal fence, other operation", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 5, 1, 3, "op-z", "z") }, nil, targetState(t, 5, 2, "op-a"), gate.RootMismatch},
		{"no upstream receipt", func() (*gate.Job, *gate.Receipt) { j, _ := jobOf(t, f, 6, 1, 1, "op-b", "b1"); return j, nil }, nil, targetState(t, 5, 2, "op-a"), gate.NotHeld},
		{"no upstream receipt, below highest", func() (*gate.Job, *gate.Receipt) { j, _ := jobOf(t, f, 4, 1, 1, "op-old", "o"); return j, nil }, nil, targetState(t, 5, 2, "op-a"), gate.StaleOwner},
		{"upstream receipt of another segment", func() (*gate.Job, *gate.Receipt) {
			j, _ := jobOf(t, f, 6, 1, 1, "op-b", "b1")
			_, other := jobOf(t, f, 6, 2, 1, "op-b", "b1")
			return j, other
		}, nil, targetState(t, 5, 2, "op-a"), gate.NotHeld},
		{"job names another receipt", func() (*gate.Job, *gate.Receipt) {
			j, up := jobOf(t, f, 6, 1, 1, "op-b", "b1")
			up.AcceptedAt = up.AcceptedAt.Add(time.Millisecond)
			return j, up
		}, nil, targetState(t, 5, 2, "op-a"), gate.NotHeld},
		{"at the floor of the target's last resume", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 6, 1, 1, "op-b", "b1") }, nil, func() gate.FenceState {
			s := targetState(t, 5, 2, "op-a")
			s.Floor = 6
			return s
		}(), gate.StaleOwner},
		{"paused target", func() (*gate.Job, *gate.Receipt) { return jobOf(t, f, 6, 1, 1, "op-b", "b1") }, nil, func() gate.FenceState {
			s := targetState(t, 5, 2, "op-a")
			s.Paused = true
			return s
		}(), gate.ResourcePaused},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			j, up := r.job()
			v, err := f.pol.AuthenticateJob(j, hop)
			if err != nil {
				t.Fatal(err)
			}
			d := gate.DecideJob(gate.JobInput{Job: j, Verified: v, State: r.state, Prior: r.prior, Upstream: up, Now: later})
			if d.Outcome != r.want {
				t.Fatalf("outcome %s (%v), want %s", d.Outcome, d.Err, r.want)
			}
			if d.Outcome != gate.Accepted && (d.State.HighestFence != r.state.HighestFence || d.Store) {
				t.Fatalf("a rejection moved the fence state: %+v", d.State)
			}
			if d.Outcome == gate.Accepted && (d.State.HighestFence != j.FenceToken || d.State.LastSegmentSeq != j.JobSeq || d.Receipt.Resource != j.Target) {
				t.Fatalf("accept stores %+v / receipt %+v", d.State, d.Receipt)
			}
			if up == nil && !errors.Is(d.Err, gate.ErrNoUpstreamReceipt) {
				t.Fatalf("%v: want cause ErrNoUpstreamReceipt", d.Err)
			}
			if d.Outcome == gate.StaleOwner && !errors.Is(d.Err, gate.ErrStaleOwner) {
				t.Fatalf("%v does not match ErrStaleOwner", d.Err)
			}
		})
	}
}

func TestAuthenticateJobRefusesWhatTheGrantDoesNotBind(t *testing.T) {
	f := newFixture(t)
	forger := gatetest.NewIssuer("forger")
	rows := []struct {
		name   string
		mutate func(j *gate.Job)
		want   gate.Outcome
	}{
		{"another upstream resource", func(j *gate.Job) { j.Resource = "invoice-batch/2026-07-20" }, gate.BindingMismatch},
		{"target of another hop", func(j *gate.Job) { j.Target = res + "/mail.jobs" }, gate.BindingMismatch},
		{"target named freely", func(j *gate.Job) { j.Target = "mirror/anything" }, gate.BindingMismatch},
		{"fence raised", func(j *gate.Job) { j.FenceToken = 99 }, gate.BindingMismatch},
		{"another operation", func(j *gate.Job) { j.OperationID = "op-x" }, gate.BindingMismatch},
		{"forged grant proof", func(j *gate.Job) {
			m := forger.Mutation(gatetest.Writer{Resource: res, Owner: owner, Lease: "lease-a", OperationID: "op-a", Fence: 5}, 1, "u")
			j.Grant, j.GrantProof = m.Grant, m.GrantProof
		}, gate.BadProof},
		{"job sequence 0", func(j *gate.Job) { j.JobSeq = 0 }, gate.Malformed},
		{"no upstream receipt named", func(j *gate.Job) { j.UpstreamReceipt = grant.Digest{} }, gate.Malformed},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			j, _ := jobOf(t, f, 5, 1, 1, "op-a", "p")
			r.mutate(j)
			_, err := f.pol.AuthenticateJob(j, hop)
			if got := gate.OutcomeOf(err); got != r.want {
				t.Fatalf("outcome %s (%v), want %s", got, err, r.want)
			}
		})
	}
}

// TestNegativeControlJobWithoutFenceOverwrites shows what step 6 buys: a
// worker that checks only the upstream receipt (the job is genuine and
// was accepted upstream) applies the superseded owner's late job after the
// newer owner's, where DecideJob refuses it.
func TestNegativeControlJobWithoutFenceOverwrites(t *testing.T) {
	f := newFixture(t)
	late, up := jobOf(t, f, 4, 1, 1, "op-old", "a's result")
	v, err := f.pol.AuthenticateJob(late, hop)
	if err != nil {
		t.Fatal(err)
	}
	in := gate.JobInput{Job: late, Verified: v, State: targetState(t, 5, 1, "op-b"), Upstream: up, Now: f.iss.Now}
	receiptOnly := in.Upstream != nil && in.Upstream.Digest() == in.Job.UpstreamReceipt
	if !receiptOnly {
		t.Fatal("the receipt-only baseline must accept the late job: the control cannot fail")
	}
	if d := gate.DecideJob(in); d.Outcome != gate.StaleOwner {
		t.Fatalf("DecideJob: %s, want STALE_OWNER", d.Outcome)
	}
}

func TestJobJSONRoundTripAndStrictness(t *testing.T) {
	f := newFixture(t)
	j, _ := jobOf(t, f, 5, 1, 1, "op-a", "p")
	b, err := j.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := gate.DecodeJob(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Target != j.Target || back.UpstreamReceipt != j.UpstreamReceipt || string(back.Grant) != string(j.Grant) || back.JobSeq != 1 {
		t.Fatalf("round trip: %+v", back)
	}
	for _, bad := range []string{string(b[:len(b)-1]) + `,"extra":1}`, string(b) + "{}", `{"jobSeq":1}`,
		strings.Replace(string(b), `"jobSeq":1`, `"jobSeq":1,"jobSeq":2`, 1), // duplicate: json keeps the last
		strings.Replace(string(b), `"target"`, `"Target"`, 1),                // re-cased: json ignores case
	} {
		if _, err := gate.DecodeJob([]byte(bad)); !errors.Is(err, gate.ErrMalformed) {
			t.Fatalf("%.60s…: %v, want MALFORMED", bad, err)
		}
	}
}
