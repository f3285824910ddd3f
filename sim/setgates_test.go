// This file proves the lock-set and semaphore rounds decide alike on
// every gate: the same rounds on gate/memgate, gate/sqlgate and
// gate/objgate give the same event-log digest (the gate's outcome of each
// write is in it), as the lock rounds' modes do.
package sim

import "testing"

func TestSetRoundsAgreeOnEveryGate(t *testing.T) {
	const rounds = 30
	var ls, sem [3]uint64
	for i, g := range []string{"mem", "sql", "obj"} {
		c, err := RunLockSetsWith(SetOptions{Seed: 7, Rounds: rounds, Gate: g})
		if err != nil || !c.OK() {
			t.Fatalf("lock sets on %s: %v %+v", g, err, c)
		}
		s, err := RunSemaphoresWith(SetOptions{Seed: 7, Rounds: rounds, Gate: g})
		if err != nil || !s.OK() {
			t.Fatalf("semaphores on %s: %v %+v", g, err, s)
		}
		ls[i], sem[i] = c.Digest, s.Digest
	}
	if ls[1] != ls[0] || ls[2] != ls[0] || sem[1] != sem[0] || sem[2] != sem[0] {
		t.Fatalf("digests mem/sql/obj: lock sets %x, semaphores %x", ls, sem)
	}
}
