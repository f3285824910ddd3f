// This file proves a Go gate ignores an envelope's gateProofs: a genuine
// envelope with pairs (even garbage ones) authenticates as it does
// without them, and a forged one is refused however good its pairs look:
// only the registry's proofs, under the gate's trust bundle, count.
package gate_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestPolicyIgnoresGateProofs(t *testing.T) {
	iss := gatetest.NewIssuer("main")
	pol := &gate.Policy{Verifier: iss.Verifier}
	if err := pol.Check(); err != nil {
		t.Fatal(err)
	}
	m := iss.Mutation(writerA(5), 1, "p")
	want, err := pol.Authenticate(m, owner)
	if err != nil {
		t.Fatal(err)
	}
	withPairs := *m
	withPairs.GateProofs = []grant.GateProof{{Gate: "db", GrantProof: "mac:x:garbage", StatusProof: "mac:x:garbage"}}
	got, err := pol.Authenticate(&withPairs, owner)
	if err == nil {
		got.Mutation.GateProofs = nil // the envelope it verified, pairs and all
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("with gate pairs: %+v %v, want %+v", got, err, want)
	}
	forged := *m
	forged.GrantProof = m.StatusProof // a genuine proof of another message
	forged.GateProofs = []grant.GateProof{{Gate: "db", GrantProof: m.GrantProof, StatusProof: m.StatusProof}}
	if _, err := pol.Authenticate(&forged, owner); !errors.Is(err, gate.ErrBadProof) {
		t.Fatalf("a bad registry proof beside a good-looking pair: %v, want BAD_PROOF", err)
	}
}
