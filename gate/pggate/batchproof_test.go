// This file proves the gate inside PostgreSQL takes envelopes from a
// registry signing batch proofs (schema version 8): the registry's
// grantProof is a batch proof longer than a single one, the database
// checks its own HMAC pair beside it and accepts; without the pair it
// refuses BAD_PROOF (it cannot check Ed25519), and a grantProof past
// gate.ProofBytesMax is MALFORMED, as the Go parser says.
package pggate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestBatchProofEnvelopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gk := gateKeysOf(t)
	iss := gatetest.NewIssuer("batch")
	db := enrollOnly(t, "gate-b-1")
	var ws []gatetest.Writer
	for i := range 16 {
		ws = append(ws, gatetest.Writer{Resource: "b/ledger", Owner: "worker-b", Lease: "l-1", OperationID: "op-1", Fence: uint64(3 + i)})
	}
	ms := iss.HeldBatchMutations(ws, "genuine")
	m := ms[0]
	if len(m.GrantProof) <= 256 || !strings.HasPrefix(m.GrantProof, "batch:") {
		t.Fatalf("fixture: a %d-byte %q", len(m.GrantProof), m.GrantProof[:6])
	}
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		t.Fatal(err)
	}
	bare := *m
	if _, err := db.run(ctx, "worker-b", iss.Now, &bare, "genuine", nil); !isBadProof(err) {
		t.Fatalf("a batch proof without the gate's pair: %v, want BAD_PROOF", err)
	}
	if m.GateProofs, err = gk.GateProofs("b/ledger", g, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.run(ctx, "worker-b", iss.Now, m, "genuine", nil); err != nil {
		t.Fatalf("a %d-byte batch proof beside the gate's pair: %v", len(m.GrantProof), err)
	}
	long := *m
	long.GrantProof = m.GrantProof + strings.Repeat("A", gate.ProofBytesMax+1-len(m.GrantProof))
	if _, err := db.run(ctx, "worker-b", iss.Now, &long, "genuine", nil); err == nil || !strings.Contains(err.Error(), "MALFORMED") {
		t.Fatalf("a grantProof past gate.ProofBytesMax: %v, want MALFORMED", err)
	}
}
