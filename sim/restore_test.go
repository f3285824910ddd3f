// This file runs a window of rounds in which a restored registry goes
// backwards without re-issuing a fence — stories the checker's ground
// truth once read as the gate's fault: the window must pass, and must
// show each story (or it proves nothing).
package sim

import "testing"

// restoreStories are the interleavings a window of rounds must show,
// each judged by the ground truth without a violation. A window rather
// than one pinned round: any change to the simulator's draws moves a
// single round, while a few thousand rounds with the restore and crash
// faults in every one show each story several times (seeds 1, 2, 3,
// 20261203 and 20261204 at the time of writing).
var restoreStories = []struct {
	name  string
	shows func(*Report) bool
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
		name:  "released grant said HELD again after a higher fence",
		shows: func(r *Report) bool { return r.RevivedGrants > 0 && r.RegressionAlarms > 0 },
	},
	{
		// A renews (committed), then the store is restored to the image
		// taken at A's grant: the restored registry expires A's lease at
		// its first expiry, before the one it had committed, while A's
		// proof from the forgotten renewal is valid and nobody else holds.
		// A's writes after that instant were counted stale.
		name:  "renewal forgotten by a restore",
		shows: func(r *Report) bool { return r.ForgottenRenewals > 0 && r.WritesApplied > 0 },
	},
}

// restoreWindowRounds is the window: about two seconds here.
const restoreWindowRounds = 3000

// restoreReplayFaults are the default rates with the restore and crash
// faults in every round.
const restoreReplayFaults = "pause=0.25,lost-renew=0.2,release-race=0.3,reorder=0.2,duplicate=0.2,payload=0.1,late=0.2,restore=1," +
	"lost-ack=0.2,skew=1,partition=0.2,crash=1,adversary=0.3,late-copy=0.3,gate-lag=0.3,long-hold=0.2"

func TestRestoredRegistryGoingBackwardsIsNotTheGatesFault(t *testing.T) {
	rates, err := ParseFaults(restoreReplayFaults)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, Config{Seed: 20261204, Rounds: restoreWindowRounds, Rates: rates})
	for _, v := range r.Violations {
		t.Errorf("%s: %s\n  %s", v.Kind, v.Detail, v.Repro)
	}
	for _, st := range restoreStories {
		if !st.shows(r) {
			t.Errorf("%d rounds of seed 20261204 never showed %q: the window proves nothing; widen it or find a seed that shows it", restoreWindowRounds, st.name)
		}
	}
}
