// This file proves the read/write lock rounds: over many rounds of
// readers, writers, downgrades and a plain lock beside them, frozen and
// dead holders, renewals, abandoned waits and waiters dying, with the status-proof
// life, the skew bound, the claim window, lock-delay, the poll bound and
// the waiter grace swept, skewed clocks and every gate drawn, never a writer beside
// anyone, never a reader's grant taken for a mutation, no stale write
// accepted, no gap in a downgrade, no reader inside a downgrade's
// hold-back, no dead reader's share past its own TTL, nobody past a
// queued writer, no wait stuck; and the same seed gives the same digest
// on any number of goroutines. Their negative controls are in
// sim/negative.
package sim_test

import (
	"testing"

	"github.com/fencegate/fencegate/sim"
)

func TestRWLockRounds(t *testing.T) {
	c, err := sim.RunRWLocks(1, 200, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *c)
	if !c.OK() || len(c.Violations) > 0 || c.Refused > 0 {
		t.Fatalf("writer beside %d, reader mutation %d, stale %d, downgrade gap %d, reader early %d, reader past TTL %d, jumped %d, stuck %d, unended %d, refused %d: %+v",
			c.WriterBeside, c.ReaderMutation, c.Stale, c.DowngradeGap, c.ReaderEarly, c.ReaderPastTTL, c.Jumped, c.Stuck, c.Unended, c.Refused, c.Violations)
	}
	if c.Reads == 0 || c.Shared == 0 || c.Writes == 0 || c.Downgrades == 0 || c.Plain == 0 || c.Frozen == 0 || c.Crashed == 0 || c.Renewed == 0 ||
		c.Abandoned == 0 || c.Vanished == 0 || c.RanOut == 0 || c.ReadGrantRefused == 0 || c.Accepted == 0 || c.Accepted == c.GateWrites {
		t.Fatalf("the rounds did not exercise shared reads, writes, downgrades, plain locks, frozen and dead holders, renewals, abandoned, dead and unserved waits, READ_GRANT refusals, accepts and refusals: %+v", c)
	}
	if n := c.Net; n.SkewedRounds == 0 || n.SkewMsMax == 0 || n.GateRounds[0] == 0 || n.GateRounds[1] == 0 || n.GateRounds[2] == 0 {
		t.Fatalf("the rounds did not exercise skewed clocks and every gate: %s", n.String())
	}
	t.Logf("%s", c.Net.String())
	again, err := sim.RunRWLocks(1, 200, 1, nil) // one goroutine: the same counts and digest
	if err != nil || again.Digest != c.Digest || again.Reads != c.Reads || again.Writes != c.Writes {
		t.Fatalf("same seed, digest %x then %x, reads %d then %d (%v)", c.Digest, again.Digest, c.Reads, again.Reads, err)
	}
}
