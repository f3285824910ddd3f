// This file runs the read/write lock rounds on gate/pggate, the gate
// inside PostgreSQL: with the fence on no count is non-zero and every
// reader's write is refused READ_GRANT there, and with the lease-only
// control (shadow mode: the fence off) a frozen writer's late write
// lands through PostgreSQL (stale > 0).
package sim

import (
	"testing"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestRWLockRoundsOnPG(t *testing.T) {
	dsn := pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off")
	const rounds = 20
	o := SetOptions{Seed: 3, Rounds: rounds, Gate: "pg", PGDSN: dsn, Parallel: 2}
	c, err := RunRWLocksWith(o)
	if err != nil || !c.OK() || c.Net.GateRounds[3] != rounds || c.Accepted == 0 || c.ReadGrantRefused == 0 {
		t.Fatalf("read/write locks on pggate: %v %+v", err, c)
	}
	o.Negative = &Negative{Name: "fence", Shadow: true}
	b, err := RunRWLocksWith(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pggate: %d accepted, %d READ_GRANT; fence off: stale %d", c.Accepted, c.ReadGrantRefused, b.Stale)
	if b.Stale == 0 || b.OK() {
		t.Fatalf("fence off on pggate: stale %d: the read/write checker cannot fail through PostgreSQL", b.Stale)
	}
}
