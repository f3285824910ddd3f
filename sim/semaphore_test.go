// This file proves the semaphore rounds: over many seeds' rounds,
// permits and plain locks beside them, frozen holders among them, never
// more than N holders of a semaphore, never a slot held twice, no stale
// write accepted at a slot's gate, under lost requests and answers,
// resends, copies, skewed clocks and every gate drawn; and the same seed gives the same
// digest on any number of goroutines. Their negative controls are in
// sim/negative.
package sim_test

import (
	"testing"

	"github.com/fencegate/fencegate/sim"
)

func TestSemaphoreRounds(t *testing.T) {
	c, err := sim.RunSemaphores(1, 200, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rounds: %d grants (%d permits), %d frozen, %d writes, %d accepted", c.Rounds, c.Grants, c.Permits, c.Frozen, c.Writes, c.Accepted)
	if !c.OK() || len(c.Violations) > 0 {
		t.Fatalf("over N %d, slot twice %d, stale %d: %+v", c.SemOverN, c.SemSlotTwice, c.SemStale, c.Violations)
	}
	if c.Permits == 0 || c.Grants == c.Permits || c.Frozen == 0 || c.Accepted == 0 {
		t.Fatalf("the rounds did not exercise permits, plain locks, frozen holders and accepts: %+v", c)
	}
	if n := c.Net; n.RequestsLost == 0 || n.AnswersLost == 0 || n.Resent == 0 || n.Copies == 0 || n.SkewedRounds == 0 ||
		n.GateRounds[0] == 0 || n.GateRounds[1] == 0 || n.GateRounds[2] == 0 {
		t.Fatalf("the rounds did not exercise lost requests and answers, resends, copies, skewed clocks and every gate: %s", n.String())
	}
	t.Logf("%s; %d given up", c.Net.String(), c.GaveUp)
	again, err := sim.RunSemaphores(1, 200, 1, nil) // one goroutine: the same counts and digest
	if err != nil || again.Digest != c.Digest || again.Grants != c.Grants {
		t.Fatalf("same seed, digest %x then %x, grants %d then %d (%v)", c.Digest, again.Digest, c.Grants, again.Grants, err)
	}
}
