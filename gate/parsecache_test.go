// This file proves that the cache of parsed grants and statuses never
// stands in for a proof check: a cached grant or status with a forged
// proof is BAD_PROOF, and a revoked epoch is refused though its grant's
// parse is cached.
package gate_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestParsedCacheNeverSkipsProofs(t *testing.T) {
	iss, forger := gatetest.NewIssuer("main"), gatetest.NewIssuer("forger")
	pol := &gate.Policy{Verifier: iss.Verifier}
	if err := pol.Check(); err != nil {
		t.Fatal(err)
	}
	m := iss.Mutation(writerA(5), 1, "p")
	for range 2 { // the second time from the cache
		if _, err := pol.Authenticate(m, owner); err != nil {
			t.Fatal(err)
		}
	}
	forged := forger.Mutation(writerA(5), 1, "p")
	badGrantProof, badStatusProof := *m, *m
	badGrantProof.GrantProof = forged.GrantProof
	badStatusProof.StatusProof = forged.StatusProof
	for name, mm := range map[string]*gate.Mutation{"grant proof": &badGrantProof, "status proof": &badStatusProof} {
		if _, err := pol.Authenticate(mm, owner); !errors.Is(err, gate.ErrBadProof) {
			t.Errorf("cached message, forged %s: %v", name, err)
		}
	}
	iss.RevokeBelow(gatetest.Epoch + 1)
	if _, err := pol.Authenticate(m, owner); !errors.Is(err, gate.ErrEpochRevoked) {
		t.Fatalf("cached grant of a revoked epoch: %v", err)
	}
}
