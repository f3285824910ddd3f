// This file proves the read/write lock rounds' counts can fail, each by
// the control that turns its protection off, on the same rounds that
// count 0 with the protections on: a store that reads a write behind and
// compares nothing (stale-read) grants a writer beside a reader; the
// gate's READ_GRANT check off (read-grant) takes a reader's grant for a
// mutation; the lease-only gate (fence) lets a frozen writer's late
// write land; a downgrade done as a release then a read acquire
// (two-step-downgrade) lets a queued writer in between; a store that
// drops ReadersFromMs (no-hold-back) admits readers while the write
// lease's statements are valid; a store giving every reader the latest
// expiry (shared-read-lease) keeps a dead reader's share past its TTL; a
// store moving readers' tickets ahead of writers' (readers-first) admits
// readers past a queued writer; waiters never stepped at their WakeAt
// (no-poll) are answered long after the lock was clear; waiters stepped
// only on their lock's commits (no-wake) are left unanswered; a store
// that drops a downgrade's request entry (forget-downgrade) answers its
// retry with another grant or none; and the lease-only gate makes the stale
// count fail through gate/sqlgate and gate/objgate as through memgate.
package negative_test

import (
	"testing"

	"github.com/fencegate/fencegate/sim"
)

func TestRWLockBreaksAreCaught(t *testing.T) {
	const rounds = 200
	fixed, err := sim.RunRWLocks(3, rounds, 0, nil)
	if err != nil || !fixed.OK() {
		t.Fatalf("protections on: %v %+v", err, fixed)
	}
	for _, c := range []struct {
		brk   string
		count func(*sim.RWLockCounts) int
	}{
		{"stale-read", func(c *sim.RWLockCounts) int { return c.WriterBeside }},
		{"read-grant", func(c *sim.RWLockCounts) int { return c.ReaderMutation }},
		{"fence", func(c *sim.RWLockCounts) int { return c.Stale }},
		{"two-step-downgrade", func(c *sim.RWLockCounts) int { return c.DowngradeGap }},
		{"no-hold-back", func(c *sim.RWLockCounts) int { return c.ReaderEarly }},
		{"shared-read-lease", func(c *sim.RWLockCounts) int { return c.ReaderPastTTL }},
		{"readers-first", func(c *sim.RWLockCounts) int { return c.Jumped }},
		{"no-poll", func(c *sim.RWLockCounts) int { return c.Stuck }},
		{"no-wake", func(c *sim.RWLockCounts) int { return c.Unended }},
		{"forget-downgrade", func(c *sim.RWLockCounts) int { return kinds(c, "downgrade-retry") }},
	} {
		broken, err := sim.RunRWLocks(3, rounds, 0, control(t, c.brk))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: writer beside %d, reader mutation %d, stale %d, downgrade gap %d, reader early %d, reader past TTL %d, jumped %d, stuck %d, unended %d, refused %d",
			c.brk, broken.WriterBeside, broken.ReaderMutation, broken.Stale, broken.DowngradeGap, broken.ReaderEarly, broken.ReaderPastTTL, broken.Jumped, broken.Stuck, broken.Unended, broken.Refused)
		if c.count(broken) == 0 || broken.OK() {
			t.Fatalf("protection %s off: the read/write lock checker cannot fail: %+v", c.brk, broken)
		}
	}
}

// kinds counts c's listed violations of kind.
func kinds(c *sim.RWLockCounts, kind string) int {
	n := 0
	for _, v := range c.Violations {
		if v.Kind == kind {
			n++
		}
	}
	return n
}

// TestRWLockFenceOffThroughEachGate shows the stale count can fail
// through gate/sqlgate and gate/objgate too: the same rounds on each
// count 0 with the fence checked and a stale accept with the lease-only
// gate.
func TestRWLockFenceOffThroughEachGate(t *testing.T) {
	const rounds = 40
	for _, g := range []string{"sql", "obj"} {
		t.Run(g, func(t *testing.T) {
			o := sim.SetOptions{Seed: 3, Rounds: rounds, Gate: g}
			c, err := sim.RunRWLocksWith(o)
			if err != nil || !c.OK() || c.Net.GateRounds[indexOf(g)] != rounds {
				t.Fatalf("read/write locks on %s, fence on: %v %+v", g, err, c)
			}
			o.Negative = control(t, "fence")
			b, err := sim.RunRWLocksWith(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("fence off on %s: stale %d of %d accepted", g, b.Stale, b.Accepted)
			if b.Stale == 0 || b.OK() {
				t.Fatalf("fence off on %s: stale %d: the read/write checker cannot fail through this gate", g, b.Stale)
			}
		})
	}
}
