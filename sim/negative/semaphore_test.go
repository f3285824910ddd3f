// This file proves the semaphore rounds' counts can fail: with the gate
// in shadow mode (the lease-only control), a frozen permit holder's late
// write lands (stale per slot > 0); with a store that reads a write
// behind and compares nothing (stale-read), a slot is granted while its
// holder is live and a semaphore has more than N live holders; the same
// rounds with the protections on count 0.
package negative_test

import (
	"testing"

	"github.com/fencegate/fencegate/sim"
)

func TestSemaphoreBreaksAreCaught(t *testing.T) {
	const rounds = 150
	fixed, err := sim.RunSemaphores(3, rounds, 0, nil)
	if err != nil || !fixed.OK() {
		t.Fatalf("protections on: %v %+v", err, fixed)
	}
	for _, c := range []struct {
		brk   string
		count func(*sim.SemaphoreCounts) int
	}{
		{"fence", func(c *sim.SemaphoreCounts) int { return c.SemStale }},
		{"stale-read", func(c *sim.SemaphoreCounts) int { return min(c.SemSlotTwice, c.SemOverN) }},
	} {
		broken, err := sim.RunSemaphores(3, rounds, 0, control(t, c.brk))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: over N %d, slot twice %d, stale %d", c.brk, broken.SemOverN, broken.SemSlotTwice, broken.SemStale)
		if c.count(broken) == 0 || broken.OK() {
			t.Fatalf("protection %s off: the semaphore checker cannot fail: %+v", c.brk, broken)
		}
	}
}
