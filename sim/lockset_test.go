// This file proves the lock-set rounds: over many seeds' rounds, sets
// over a small pool named in random orders, plain locks beside them,
// frozen holders, renewals and abandoned waits among them, never a
// partial set held, never a waiting set holding anything, never a member
// held twice, no stale write accepted at a member's gate, no wait running
// out stuck or in a deadlock, under lost requests and answers, resends,
// copies, skewed clocks and every gate drawn; and the same seed gives the same digest on
// any number of goroutines. Their negative controls are in sim/negative.
package sim_test

import (
	"testing"

	"github.com/fencegate/fencegate/sim"
)

func TestLockSetRounds(t *testing.T) {
	c, err := sim.RunLockSets(1, 200, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rounds: %d sets (%d member grants), %d plain, %d frozen, %d crashed, %d renewed, %d abandoned, %d ran out (longest answer after every member was clear: %d ms), %d refused, %d writes, %d accepted",
		c.Rounds, c.Sets, c.MemberGrants, c.Plain, c.Frozen, c.Crashed, c.Renewed, c.Abandoned, c.RanOut, c.ClearMsMax, c.Refused, c.Writes, c.Accepted)
	if !c.OK() || len(c.Violations) > 0 || c.Refused > 0 {
		t.Fatalf("partial %d, waiter holds %d, member twice %d, stale %d, stuck %d, deadlocks %d, unended %d, refused %d: %+v",
			c.SetPartial, c.SetWaiterHolds, c.MemberTwice, c.MemberStale, c.Stuck, c.Deadlocks, c.Unended, c.Refused, c.Violations)
	}
	if c.Sets == 0 || c.Plain == 0 || c.Frozen == 0 || c.Crashed == 0 || c.Renewed == 0 || c.Abandoned == 0 || c.RanOut == 0 || c.Accepted == 0 || c.Accepted == c.Writes {
		t.Fatalf("the rounds did not exercise sets, plain locks, frozen holders, renewals, abandoned and unserved waits, accepts and refusals: %+v", c)
	}
	if n := c.Net; n.RequestsLost == 0 || n.AnswersLost == 0 || n.Resent == 0 || n.Copies == 0 || n.SkewedRounds == 0 || c.Ended+c.GaveUp == 0 ||
		n.GateRounds[0] == 0 || n.GateRounds[1] == 0 || n.GateRounds[2] == 0 {
		t.Fatalf("the rounds did not exercise lost requests and answers, resends, copies, skewed clocks and every gate: %s, %d ended, %d given up", n.String(), c.Ended, c.GaveUp)
	}
	t.Logf("%s; %d ended before their answer, %d given up", c.Net.String(), c.Ended, c.GaveUp)
	again, err := sim.RunLockSets(1, 200, 1, nil) // one goroutine: the same counts and digest
	if err != nil || again.Digest != c.Digest || again.MemberGrants != c.MemberGrants {
		t.Fatalf("same seed, digest %x then %x, member grants %d then %d (%v)", c.Digest, again.Digest, c.MemberGrants, again.MemberGrants, err)
	}
}
