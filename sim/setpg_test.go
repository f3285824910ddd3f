// This file runs the lock-set and semaphore rounds on gate/pggate, the
// gate inside PostgreSQL: with the fence on no count is non-zero, and
// with the lease-only control (shadow mode: the fence off) a frozen
// holder's late write lands through PostgreSQL (stale > 0).
package sim

import (
	"testing"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestSetRoundsOnPG(t *testing.T) {
	dsn := pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off")
	const rounds = 20
	o := SetOptions{Seed: 3, Rounds: rounds, Gate: "pg", PGDSN: dsn, Parallel: 2}
	ls, err := RunLockSetsWith(o)
	if err != nil || !ls.OK() || ls.Net.GateRounds[3] != rounds || ls.Accepted == 0 {
		t.Fatalf("lock sets on pggate: %v %+v", err, ls)
	}
	sem, err := RunSemaphoresWith(o)
	if err != nil || !sem.OK() || sem.Accepted == 0 {
		t.Fatalf("semaphores on pggate: %v %+v", err, sem)
	}
	o.Negative = &Negative{Name: "fence", Shadow: true}
	bls, err := RunLockSetsWith(o)
	if err != nil {
		t.Fatal(err)
	}
	bsem, err := RunSemaphoresWith(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pggate: lock sets %d accepted, semaphores %d; fence off: stale %d and %d", ls.Accepted, sem.Accepted, bls.MemberStale, bsem.SemStale)
	if bls.MemberStale == 0 || bsem.SemStale == 0 {
		t.Fatalf("fence off on pggate: lock sets stale %d, semaphores stale %d: the checker cannot fail through PostgreSQL", bls.MemberStale, bsem.SemStale)
	}
}
