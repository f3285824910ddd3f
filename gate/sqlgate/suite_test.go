// This file is the behavioural suite every SQL backend runs (runSuite),
// and its first two parts: one row per safety rule (each re-reading the
// fence row to prove highestFence did not move), replay and quarantine,
// and regression and resume. The other parts live by concept:
// business_test.go, guard_test.go, modes_test.go, verdicts_test.go,
// querier_test.go, concurrent_test.go, upgrade_test.go.
package sqlgate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func runSuite(t *testing.T, b backend) {
	t.Run("Rules", func(t *testing.T) { testRules(t, b) })
	t.Run("RegressionPausesUntilResume", func(t *testing.T) { testRegression(t, b) })
	t.Run("BusinessFailureWritesNothing", func(t *testing.T) { testBusinessFailure(t, b) })
	t.Run("CoverageGuard", func(t *testing.T) { testCoverage(t, b) })
	t.Run("ProtectResource", func(t *testing.T) { testProtectResource(t, b) })
	t.Run("ShadowThenEnforce", func(t *testing.T) { testModes(t, b) })
	t.Run("OperationVerdicts", func(t *testing.T) { testVerdicts(t, b) })
	t.Run("StatusQuerier", func(t *testing.T) { testQuerier(t, b) })
	t.Run("StaleDirectWriteLands", func(t *testing.T) { testNegativeControl(t, b) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrent(t, b) })
	t.Run("SchemaUpgradeAndInvariants", func(t *testing.T) { testUpgrade(t, b) })
	t.Run("UpgradeToOneStatementAccept", func(t *testing.T) { testUpgradeToOneStatementAccept(t, b) })
	t.Run("GuardAfterUnguardedAccepts", func(t *testing.T) { testGuardAfterUnguardedAccepts(t, b) })
	t.Run("GuardUpgrade", func(t *testing.T) { testGuardUpgrade(t, b) })
}

const owner = "worker-a"

func wr(resource string, fence uint64, op string) gatetest.Writer {
	return gatetest.Writer{Resource: resource, Owner: owner, Lease: "lease-1", OperationID: op, Fence: fence}
}

// testRules sets up fence 5, segments 1–2 of op-a on a resource of its own
// per row, applies the row's mutation, and checks the outcome and that a
// rejection left the fence row and the ledger as they were.
func testRules(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	revoked := gatetest.NewIssuer("main")
	revoked.Epoch = 3
	forger := gatetest.NewIssuer("forger")
	rows := []struct {
		name   string
		mut    func(r string) *gate.Mutation
		caller string
		prep   func(r string)
		want   gate.Outcome
	}{
		{"next segment accepted", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 5, "op-a"), 3, "p3") }, owner, nil, gate.Accepted},
		{"larger fence seq 1 accepted", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 6, "op-b"), 1, "p") }, owner, nil, gate.Accepted},
		{"larger fence with seq != 1", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 6, "op-b"), 2, "p") }, owner, nil, gate.SegmentGap},
		{"equal fence another root", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 5, "op-z"), 3, "p") }, owner, nil, gate.FenceRegression},
		{"skipped seq", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 5, "op-a"), 4, "p") }, owner, nil, gate.SegmentGap},
		{"replay same payload", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 5, "op-a"), 2, "p2") }, owner, nil, gate.Replayed},
		{"replay different payload", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 5, "op-a"), 2, "evil") }, owner, nil, gate.Quarantined},
		{"smaller fence", func(r string) *gate.Mutation {
			return e.iss.WithStatus(e.iss.Mutation(wr(r, 4, "op-old"), 1, "p"), grant.StateExpired)
		}, owner, nil, gate.StaleOwner},
		{"equal fence, next segment, re-issued grant: regression", func(r string) *gate.Mutation {
			w := wr(r, 5, "op-a")
			w.Lease = "lease-reissued" // another grant with the same fence and root
			return e.iss.Mutation(w, 3, "p3")
		}, owner, nil, gate.FenceRegression},
		{"replay under a re-issued grant: regression", func(r string) *gate.Mutation {
			w := wr(r, 5, "op-a")
			w.Lease = "lease-reissued"
			return e.iss.Mutation(w, 2, "p2")
		}, owner, nil, gate.FenceRegression},
		{"smaller fence, HELD proof issued after the grant at highest: regression", func(r string) *gate.Mutation {
			return e.iss.Later(time.Second).WithStatus(e.iss.Mutation(wr(r, 4, "op-old"), 1, "p"), grant.StateHeld)
		}, owner, nil, gate.FenceRegression},
		{"smaller fence, HELD proof issued before the grant at highest: stale", func(r string) *gate.Mutation {
			return e.iss.Later(-time.Second).Mutation(wr(r, 4, "op-old"), 1, "p")
		}, owner, nil, gate.StaleOwner},
		{"smaller fence, HELD proof within the skew bound: stale, suspected", func(r string) *gate.Mutation {
			return e.iss.Mutation(wr(r, 4, "op-old"), 1, "p")
		}, owner, nil, gate.StaleOwner},
		{"malformed envelope", func(r string) *gate.Mutation {
			m := e.iss.Mutation(wr(r, 6, "op-b"), 1, "p")
			m.OperationID = "bad id"
			return m
		}, owner, nil, gate.Malformed},
		{"tampered grant", func(r string) *gate.Mutation {
			m := e.iss.Mutation(wr(r, 6, "op-b"), 1, "p")
			m.Grant[len(m.Grant)-3] ^= 1
			return m
		}, owner, nil, gate.BadProof},
		{"forged grant", func(r string) *gate.Mutation { return forger.Mutation(wr(r, 1000, "op-b"), 1, "p") }, owner, nil, gate.BadProof},
		{"cross-resource proof", func(r string) *gate.Mutation {
			m := e.iss.Mutation(wr("other/resource", 6, "op-b"), 1, "p")
			m.Resource, m.OperationID = r, "op-b"
			return m
		}, owner, nil, gate.BindingMismatch},
		{"identity mismatch", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 6, "op-b"), 1, "p") }, "worker-b", nil, gate.IdentityMismatch},
		{"revoked epoch", func(r string) *gate.Mutation { return revoked.Mutation(wr(r, 6, "op-b"), 1, "p") }, owner, nil, gate.EpochRevoked},
		{"not held", func(r string) *gate.Mutation {
			return e.iss.WithStatus(e.iss.Mutation(wr(r, 6, "op-b"), 1, "p"), grant.StateReleased)
		}, owner, nil, gate.NotHeld},
		{"no status proof", func(r string) *gate.Mutation { return gatetest.WithoutStatus(e.iss.Mutation(wr(r, 6, "op-b"), 1, "p")) }, owner, nil, gate.NotHeld},
		{"proof expired", func(r string) *gate.Mutation {
			i := *e.iss
			i.StatusValidFor = time.Second + 400*time.Millisecond // within the 500 ms skew bound of the gate clock
			return i.Mutation(wr(r, 6, "op-b"), 1, "p")
		}, owner, nil, gate.ProofExpired},
		{"policy stale", func(r string) *gate.Mutation { return e.iss.Mutation(wr(r, 6, "op-b"), 1, "p") }, owner, func(r string) {
			if err := e.g.SetMinPolicyGeneration(e.ctx, e.db, r, 2, "ops"); err != nil {
				t.Fatal(err)
			}
		}, gate.PolicyStale},
	}
	for i, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := "rules/" + string(rune('a'+i))
			for seq, p := range []string{"p1", "p2"} {
				if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), uint64(seq+1), p), p); err != nil {
					t.Fatalf("setup segment %d: %v", seq+1, err)
				}
			}
			if row.prep != nil {
				row.prep(r)
			}
			before := e.state(r)
			ledger := e.count(`SELECT count(*) FROM ledger WHERE resource = $1`, r)
			m := row.mut(r)
			rc, err := e.apply(row.caller, m, "payload-"+row.name)
			if got := gate.OutcomeOf(err); got != row.want {
				t.Fatalf("outcome %s (%v), want %s", got, err, row.want)
			}
			after := e.state(r)
			switch row.want {
			case gate.Accepted:
				if after.HighestFence != m.FenceToken || after.LastSegmentSeq != m.SegmentSeq || rc.ID() == "" {
					t.Fatalf("accepted but state %+v receipt %+v", after, rc)
				}
				if n := e.count(`SELECT count(*) FROM ledger WHERE resource = $1`, r); n != ledger+1 {
					t.Fatalf("ledger rows %d, want %d", n, ledger+1)
				}
				return
			case gate.Replayed:
				if !gate.IsSuccess(err) || rc.SegmentSeq != 2 || rc.PayloadDigest != gatetest.Payload("p2") {
					t.Fatalf("replay must return the original receipt: %+v", rc)
				}
			}
			if after.HighestFence != before.HighestFence || after.LastSegmentSeq != before.LastSegmentSeq || after.Root != before.Root {
				t.Fatalf("rejection moved the fence row: before %+v after %+v", before, after)
			}
			if n := e.count(`SELECT count(*) FROM ledger WHERE resource = $1`, r); n != ledger {
				t.Fatalf("rejection wrote business rows: %d, want %d", n, ledger)
			}
			if row.want == gate.Quarantined && e.count(`SELECT count(*) FROM fencegate_quarantine WHERE resource = $1`, r) != 1 {
				t.Fatal("quarantine row missing")
			}
		})
	}
	if n := e.g.Counters().Get(gate.BadProof); n != 2 {
		t.Errorf("BAD_PROOF counter %d, want 2", n)
	}
}

func testRegression(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "reg/one"
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	restored := e.iss.Later(time.Second) // a restored registry re-issues fence 3 after fence 5's grant
	_, err := e.apply(owner, restored.Mutation(wr(r, 3, "op-restored"), 1, "p"), "p")
	var rej *gate.Rejection
	if !errors.As(err, &rej) || rej.Outcome != gate.FenceRegression || !errors.Is(err, gate.ErrStaleOwner) || !rej.Recorded {
		t.Fatalf("got %v", err)
	}
	st := e.state(r)
	if !st.Paused || st.HighestFence != 5 {
		t.Fatalf("state %+v", st)
	}
	alarms, err := e.g.Records(e.ctx, e.db, "alarms", r)
	if err != nil || len(alarms) != 1 || alarms[0].Kind != string(gate.FenceRegression) {
		t.Fatalf("alarms %+v %v", alarms, err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 6, "op-b"), 1, "p"), "p"); !errors.Is(err, gate.ErrResourcePaused) {
		t.Fatalf("paused resource accepted: %v", err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); !errors.Is(err, gate.ErrReplayed) {
		t.Fatalf("exact replay on a paused resource: %v", err)
	}
	if err := e.g.Resume(e.ctx, e.db, r, 5, "ops", "floor not raised"); !errors.Is(err, gate.ErrResumeRefused) {
		t.Fatalf("resume below floor: %v", err)
	}
	if err := e.g.Resume(e.ctx, e.db, r, 100, "ops", "registry floor raised to 100"); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM fencegate_operator_actions WHERE subject = $1 AND action = 'resume' AND operator = 'ops'`, r); n != 1 {
		t.Fatalf("resume not recorded: %d", n)
	}
	if st := e.state(r); st.Paused || st.Floor != 100 || !st.FloorAt.Equal(e.clock.Now().Truncate(time.Millisecond)) {
		t.Fatalf("resume must keep its floor and instant: %+v", st)
	}
	// The regressed grant's later writes are from before the repair: stale,
	// and no second pause.
	if _, err := e.apply(owner, restored.Mutation(wr(r, 3, "op-restored"), 1, "p"), "p"); !errors.Is(err, gate.ErrStaleOwner) || errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("pre-repair grant after resume: %v", err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 101, "op-c"), 1, "p"), "p"); err != nil {
		t.Fatalf("after resume: %v", err)
	}
}
