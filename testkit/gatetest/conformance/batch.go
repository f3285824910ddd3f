package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// This file holds batch-signed grants (grant.SignBatch) as every gate
// that verifies Ed25519 must judge them: each grant of a batch opens its
// own resource's gate alone, and a grant the registry never signed is
// refused with BAD_PROOF, nothing changed, whatever genuine path or
// cached root it is sent with. The gate inside PostgreSQL checks only
// its own HMAC proofs (grant.GateProof) and does not run these.

// RunBatchProofs runs the batch-proof cases against the adapter
// newHarness builds.
func RunBatchProofs(t *testing.T, newHarness Factory) {
	for _, c := range BatchCases() {
		t.Run(c.Name, func(t *testing.T) {
			c.Run(t, NewEnv(t, newHarness))
		})
	}
}

// BatchCases returns the batch-proof table.
func BatchCases() []Case {
	return []Case{
		{"BatchGrantsEachOpenTheirGate", testBatchAccept},
		{"ForgedBesideCachedRootRefused", testBatchForged},
	}
}

// batchWriters are n writers on n resources, all fence 5.
func batchWriters(prefix string, n int) []gatetest.Writer {
	ws := make([]gatetest.Writer, n)
	for i := range ws {
		ws[i] = W(fmt.Sprintf("%s/%d", prefix, i), 5, "op-a")
	}
	return ws
}

func testBatchAccept(t T, e *Env) {
	ms := e.Iss.HeldBatchMutations(batchWriters("conf/batch", 7), "a1")
	for i := len(ms) - 1; i >= 0; i-- { // any order: each verifies alone
		mustAccept(t, e, e.H, ms[i], "a1")
	}
}

func testBatchForged(t T, e *Env) {
	ws := batchWriters("conf/batch-forged", 4)
	ms := e.Iss.HeldBatchMutations(ws, "a1")
	mustAccept(t, e, e.H, ms[0], "a1") // the root is verified, and cached
	r := ws[1].Resource
	before := snap(t, e, e.H, r)
	// A grant for resource 1 with a fence the registry never issued,
	// sent with the genuine proof of resource 1's grant (its path to the
	// cached root) and with resource 0's.
	g := grantOf(t, ms[1])
	g.FenceToken = 1 << 40
	for _, proof := range []string{ms[1].GrantProof, ms[0].GrantProof} {
		forged := *ms[1]
		forged.Grant, forged.FenceToken, forged.GrantProof = g.Encode(), g.FenceToken, proof
		_, err := apply(t, e, e.H, &forged, "a1")
		wantOutcome(t, err, gate.BadProof)
		unchanged(t, e, e.H, r, before, "a forged grant beside a cached root")
	}
	// The genuine grant with its path's first sibling flipped.
	bp, err := grant.ParseBatchProof(ms[1].GrantProof)
	if err != nil || len(bp.Path) == 0 {
		t.Fatalf("fixture: %v", err)
	}
	bp.Path[0][0] ^= 1
	tampered := *ms[1]
	tampered.GrantProof = bp.String()
	_, err = apply(t, e, e.H, &tampered, "a1")
	wantOutcome(t, err, gate.BadProof)
	unchanged(t, e, e.H, r, before, "a tampered path")
	if !strings.HasPrefix(ms[1].GrantProof, "batch:") {
		t.Fatalf("fixture: %q is not a batch proof", ms[1].GrantProof)
	}
	mustAccept(t, e, e.H, ms[1], "a1")
}
