// This file proves the lock-set rounds' counts can fail, each by the
// control that turns its protection off, on the same rounds that count 0
// with the protections on: the lease-only gate (fence) lets a frozen set
// holder's late write land (stale per member > 0); a store that commits a
// set write member by member (set-split) grants and holds sets in part;
// the MultiLock worker (multilock) holds members while it waits and
// deadlocks; waiters never stepped at their WakeAt (no-poll) run out
// with every member free; a store that reads behind and compares nothing
// (stale-read) grants a member twice.
package negative_test

import (
	"testing"

	"github.com/fencegate/fencegate/sim"
)

func TestLockSetBreaksAreCaught(t *testing.T) {
	const rounds = 150
	fixed, err := sim.RunLockSets(3, rounds, 0, nil)
	if err != nil || !fixed.OK() {
		t.Fatalf("protections on: %v %+v", err, fixed)
	}
	for _, c := range []struct {
		brk   string
		count func(*sim.LockSetCounts) int
	}{
		{"fence", func(c *sim.LockSetCounts) int { return c.MemberStale }},
		{"set-split", func(c *sim.LockSetCounts) int { return c.SetPartial }},
		{"multilock", func(c *sim.LockSetCounts) int { return min(c.SetWaiterHolds, c.Deadlocks) }},
		{"no-poll", func(c *sim.LockSetCounts) int { return c.Stuck }},
		{"stale-read", func(c *sim.LockSetCounts) int { return c.MemberTwice }},
	} {
		broken, err := sim.RunLockSets(3, rounds, 0, control(t, c.brk))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: partial %d, waiter holds %d, member twice %d, stale %d, stuck %d, deadlocks %d, unended %d, refused %d",
			c.brk, broken.SetPartial, broken.SetWaiterHolds, broken.MemberTwice, broken.MemberStale, broken.Stuck, broken.Deadlocks, broken.Unended, broken.Refused)
		if c.count(broken) == 0 || broken.OK() {
			t.Fatalf("protection %s off: the lock-set checker cannot fail: %+v", c.brk, broken)
		}
	}
}
