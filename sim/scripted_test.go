// This file scripts, rather than seeds, two gaps the simulator found: a
// write under a fence a restored registry re-issued to the same client
// (same fence, same operation root, another grant), which the gate now
// answers with FENCE_REGRESSION; and a copy of a rejected write accepted
// after its grant was released, because status proofs outlive a release
// (closed by the client's drain: see docs/guarantees.md, "After a release").
package sim

import (
	"context"
	"slices"
	"testing"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

func TestScriptedReissuedFenceIsRefusedByTheGate(t *testing.T) {
	w := scriptedWorld(t)
	k := w.workers[1]
	empty := w.store.Image()
	req := wire.AcquireRequest{Resource: w.res.name, OperationID: "op-b", OperationClass: "settle", RequestID: "req-b", TTLMs: scriptedTTLMs}
	write := func(is wire.Issued, seq uint64) gate.Outcome {
		m := &gate.Mutation{
			Resource: w.res.name, Lease: is.Grant.Lease, OperationID: "op-b", FenceToken: is.Grant.FenceToken,
			SegmentSeq: seq, PayloadDigest: payloadDigest("op-b", seq, 0), Grant: is.Grant.Encode(),
			GrantProof: is.GrantProof,
		}
		if is.Status != nil {
			m.Status, m.StatusProof = is.Status.Encode(), is.StatusProof
		}
		out, _ := w.res.apply(m, k.name, origin{writer: k})
		return out
	}
	first, err := w.regs[0].Acquire(context.Background(), k.name, req)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 2; seq++ {
		if out := write(first, seq); out != gate.Accepted {
			t.Fatalf("segment %d under the first grant: %s", seq, out)
		}
	}
	w.now += 100
	w.store.Restore(empty, memstore.BumpRevisions) // the registry's store goes back to before the grant
	w.restartReplica()
	second, err := w.regs[0].Acquire(context.Background(), k.name, req) // the same request ID, retried
	if err != nil {
		t.Fatal(err)
	}
	if second.Grant.Lease == first.Grant.Lease || second.Grant.FenceToken != first.Grant.FenceToken {
		t.Fatalf("expected a different grant with the same fence: %s/%d then %s/%d",
			first.Grant.Lease, first.Grant.FenceToken, second.Grant.Lease, second.Grant.FenceToken)
	}
	outs := []gate.Outcome{write(second, 1), write(second, 2), write(second, 3)}
	want := []gate.Outcome{gate.FenceRegression, gate.ResourcePaused, gate.ResourcePaused}
	if !slices.Equal(outs, want) {
		t.Fatalf("second grant's segments 1-3: %v, want %v", outs, want)
	}
	if w.counts.RegressionAccepted != 0 {
		t.Fatalf("the checker counted %d accepts under a re-issued fence", w.counts.RegressionAccepted)
	}
}

// TestScriptedCopyAfterReleaseIsStale scripts why the client's Release
// drains: the registry frees the resource at once on a release, the status
// proof attached to an unsettled write stays valid, and a copy of that
// write still in the network is accepted once the resource can take it —
// while its grant holds nothing. The worker here releases without the
// drain (what Lease.ReleaseNoDrain does), and the checker counts the stale
// write; with the drain the release waits for the proof.
func TestScriptedCopyAfterReleaseIsStale(t *testing.T) {
	for _, drain := range []bool{false, true} {
		w := scriptedWorld(t)
		k := w.workers[0]
		ctx := context.Background()
		is, err := w.regs[0].Acquire(ctx, k.name, wire.AcquireRequest{Resource: w.res.name, OperationID: "op-a", OperationClass: "settle", RequestID: "req-a", TTLMs: scriptedTTLMs})
		if err != nil {
			t.Fatal(err)
		}
		l := core.NewLease(k.limits, core.Granted{Issued: is, OperationID: "op-a", From: k.localNow()}, nil)
		env := func(seq uint64) *gate.Mutation {
			rd := l.Step(k.localNow(), core.BuildEnvelope{Segment: seq, Payload: payloadDigest("op-a", seq, 0)})
			if rd.Err != nil {
				t.Fatal(rd.Err)
			}
			return &rd.Envelope
		}
		if out, _ := w.res.apply(env(1), k.name, origin{writer: k}); out != gate.Accepted {
			t.Fatalf("segment 1: %s", out)
		}
		l.Step(k.localNow(), core.Settle{Segment: 1, Outcome: gate.Accepted})
		copy2 := env(2) // sent; its answer is lost, so it stays unsettled
		w.now += 10
		l.Step(k.localNow(), core.Release{Drain: drain})
		if call := l.Next(k.localNow()).Call; drain == (call.Kind == core.CallRelease) {
			t.Fatalf("drain %v: the core asked for %s at once", drain, call.Kind)
		}
		if drain {
			continue // the release waits for the proof; nothing is freed
		}
		if err := w.regs[0].Release(ctx, k.name, w.res.name, is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		w.now += 10
		if out, _ := w.res.apply(copy2, k.name, origin{writer: k}); out != gate.Accepted { // the copy arrives
			t.Fatalf("the copy after the release was refused (%s): proofs no longer outlive a release; make this test assert the refusal and update doc.go", out)
		}
		if w.counts.StaleNotHolder != 1 {
			t.Fatalf("the checker counted %d stale writes from a released grant, want 1", w.counts.StaleNotHolder)
		}
	}
}

// scriptedTTLMs is the scripted stories' lease TTL.
const scriptedTTLMs = 3000

// scriptedWorld is one round's world with default configuration, for
// tests that script the parties by hand instead of letting faults fire.
func scriptedWorld(t *testing.T) *world {
	t.Helper()
	cfg := Config{Rounds: 1, Seed: 1}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	keys, err := newKeySet(cfg.Alg, cfg.skewBound())
	if err != nil {
		t.Fatal(err)
	}
	return newWorld(&cfg, keys, 1, &Counts{}, nil)
}
