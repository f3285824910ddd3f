// This file proves, with a scripted scenario rather than a seed, that the
// gate accepts a write under a fence a restored registry re-issued: the
// same client, retrying its journalled request ID after the registry lost
// its state, gets a different grant with the same fence and operation
// root, and the gate cannot tell the two grants apart.
package sim

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/registry"
)

func TestScriptedReissuedFenceIsAcceptedByTheGate(t *testing.T) {
	cfg := Config{Rounds: 1, Seed: 1}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	keys, err := newKeySet(cfg.Alg, cfg.skewBound())
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(&cfg, keys, 1, &Counts{})
	k := w.workers[1]
	empty := w.store.image()
	req := registry.AcquireRequest{Resource: w.res.name, OperationID: "op-b", OperationClass: "settle", RequestID: "req-b", TTLMs: leaseTTLMs}
	write := func(is registry.Issued, seq uint64) gate.Outcome {
		m := &gate.Mutation{
			Resource: w.res.name, Lease: is.Grant.Lease, OperationID: "op-b", FenceToken: is.Grant.FenceToken,
			SegmentSeq: seq, PayloadDigest: payloadDigest("op-b", seq, 0), Grant: is.Grant.Encode(),
			GrantProof: is.GrantProof, Status: is.Status.Encode(), StatusProof: is.StatusProof,
		}
		return w.res.apply(m, k.name, origin{writer: k})
	}
	first, err := w.reg.Acquire(context.Background(), k.name, req)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 2; seq++ {
		if out := write(first, seq); out != gate.Accepted {
			t.Fatalf("segment %d under the first grant: %s", seq, out)
		}
	}
	w.now += 100
	w.store.restore(empty) // the registry's store goes back to before the grant
	w.startRegistry()
	second, err := w.reg.Acquire(context.Background(), k.name, req) // the same request ID, retried
	if err != nil {
		t.Fatal(err)
	}
	if second.Grant.Lease == first.Grant.Lease || second.Grant.FenceToken != first.Grant.FenceToken {
		t.Fatalf("expected a different grant with the same fence: %s/%d then %s/%d",
			first.Grant.Lease, first.Grant.FenceToken, second.Grant.Lease, second.Grant.FenceToken)
	}
	outs := []gate.Outcome{write(second, 1), write(second, 2), write(second, 3)}
	t.Logf("second grant's segments 1-3: %v", outs)
	if outs[2] != gate.Accepted {
		t.Fatalf("the gate refused the re-issued fence (%v): the gap is closed; make this test assert the refusal", outs)
	}
	if w.counts.RegressionAccepted == 0 {
		t.Fatal("the checker did not count the accept under a re-issued fence")
	}
}
