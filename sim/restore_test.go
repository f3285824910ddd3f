// This file replays rounds in which a restored registry went backwards
// without re-issuing a fence, which the checker's ground truth once read
// as the gate's fault: each must pass, and must still show the
// interleaving it was kept for (or the replay has drifted and proves
// nothing: find the round again with the command in its comment).
package sim

import "testing"

// restoreReplays are single rounds found by long runs (each replays in
// milliseconds). Faults are listed by name as the repro line prints them.
var restoreReplays = []struct {
	name   string
	seed   uint64
	round  int
	faults string
	shows  func(*Report) bool // the interleaving still happens
}{
	{
		// A releases fence 1 and B takes fence 2; the store is restored to
		// the image taken at A's grant, losing both; A, restarted, asks
		// again with its journalled request ID and gets its fence-1 lease
		// back HELD; its held-back segment then reaches the gate with a
		// HELD statement about fence 1 issued after fence 2's grant, and
		// the gate rightly pauses. The checker used to count a regression
		// only when a new grant reused a fence, and called the pause
		// spurious.
		name: "released grant said HELD again after a higher fence", seed: 20261204, round: 107538,
		faults: restoreReplayFaults,
		shows:  func(r *Report) bool { return r.RevivedGrants > 0 && r.RegressionAlarms > 0 },
	},
	{
		// A renews (committed), then the store is restored to the image
		// taken at A's grant: the restored registry expires A's lease at
		// its first expiry, before the one it had committed, while A's
		// proof from the forgotten renewal is valid and nobody else holds.
		// A's writes after that instant were counted stale.
		name: "renewal forgotten by a restore", seed: 20261204, round: 4661,
		faults: restoreReplayFaults,
		shows:  func(r *Report) bool { return r.ForgottenRenewals > 0 && r.WritesApplied > 0 },
	},
}

// restoreReplayFaults are the default rates with the restore and crash
// faults in every round. The rounds above were found by
// `fencegate sim --rounds 200000 --seed 20261204 --faults <these>`.
const restoreReplayFaults = "pause=0.25,lost-renew=0.2,release-race=0.3,reorder=0.2,duplicate=0.2,payload=0.1,late=0.2,restore=1," +
	"lost-ack=0.2,skew=1,partition=0.2,crash=1,adversary=0.3,late-copy=0.3,gate-lag=0.3,long-hold=0.2"

func TestRestoredRegistryGoingBackwardsIsNotTheGatesFault(t *testing.T) {
	for _, tc := range restoreReplays {
		t.Run(tc.name, func(t *testing.T) {
			rates, err := ParseFaults(tc.faults)
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, Config{Seed: tc.seed, Rounds: tc.round, Round: tc.round, Rates: rates})
			for _, v := range r.Violations {
				t.Errorf("%s: %s\n  %s", v.Kind, v.Detail, v.Repro)
			}
			if !tc.shows(r) {
				t.Errorf("round %d of seed %d no longer shows the interleaving (the simulator changed): find it again", tc.round, tc.seed)
			}
		})
	}
}
