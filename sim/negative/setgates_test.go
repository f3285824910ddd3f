// This file proves that the lock-set and semaphore rounds' stale counts
// can fail through every gate they draw, not only gate/memgate: with the
// fence off (the lease-only control: every resource in shadow mode) on
// gate/sqlgate (SQLite) and on gate/objgate, a frozen holder's late
// write lands and MemberStale / SemStale are non-zero; the same rounds
// on the same gate with the fence on count 0. (The PostgreSQL gate's
// control is in sim, beside the PostgreSQL mode's test.)
package negative_test

import (
	"testing"

	"github.com/fencegate/fencegate/sim"
)

func TestSetRoundsFenceOffThroughEachGate(t *testing.T) {
	const rounds = 40
	for _, g := range []string{"sql", "obj"} {
		t.Run(g, func(t *testing.T) {
			o := sim.SetOptions{Seed: 3, Rounds: rounds, Gate: g}
			ls, err := sim.RunLockSetsWith(o)
			if err != nil || !ls.OK() || ls.Net.GateRounds[indexOf(g)] != rounds {
				t.Fatalf("lock sets on %s, fence on: %v %+v", g, err, ls)
			}
			sem, err := sim.RunSemaphoresWith(o)
			if err != nil || !sem.OK() {
				t.Fatalf("semaphores on %s, fence on: %v %+v", g, err, sem)
			}
			o.Negative = control(t, "fence")
			bls, err := sim.RunLockSetsWith(o)
			if err != nil {
				t.Fatal(err)
			}
			bsem, err := sim.RunSemaphoresWith(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("fence off on %s: lock sets stale %d of %d accepted; semaphores stale %d of %d accepted", g, bls.MemberStale, bls.Accepted, bsem.SemStale, bsem.Accepted)
			if bls.MemberStale == 0 || bls.OK() || bsem.SemStale == 0 || bsem.OK() {
				t.Fatalf("fence off on %s: lock sets stale %d, semaphores stale %d: the checker cannot fail through this gate", g, bls.MemberStale, bsem.SemStale)
			}
		})
	}
}

// indexOf is g's index in sim.NetCounts.GateRounds.
func indexOf(g string) int {
	for i, n := range []string{"mem", "sql", "obj", "pg"} {
		if n == g {
			return i
		}
	}
	return -1
}
