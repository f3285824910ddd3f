// This file proves receipts kept in the manifest and written out in
// batches answer as receipt objects did: past several write-outs the
// receipt query (and ReceiptAt, a downstream target's lookup) finds every
// receipt, an old segment replays with its
// original receipt or is quarantined, another grant at an old position
// is a regression — for the gate that wrote them and for a fresh one —
// while a run of writes costs one PUT each plus two per batch.
package objgate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestReceiptsWrittenOutInBatches(t *testing.T) {
	ctx := context.Background()
	hs, cc, iss := bucketGates(t, 2)
	a, fresh := hs[0], hs[1]
	const r = "obj/batches"
	w := func(fence uint64, op string) gatetest.Writer {
		return gatetest.Writer{Resource: r, Owner: "worker-a", Lease: op, OperationID: op, Fence: fence}
	}
	n := 2*objgate.ManifestReceiptsMax + 3
	var rcpts []gate.Receipt
	before := cc.puts.Load()
	for seq := 1; seq <= n; seq++ {
		p := fmt.Sprintf("a%d", seq)
		rc, err := a.Apply(ctx, "worker-a", iss.Mutation(w(5, "op-a"), uint64(seq), p), p)
		if err != nil {
			t.Fatalf("segment %d: %v", seq, err)
		}
		rcpts = append(rcpts, rc)
	}
	batches := int64(n-1) / objgate.ManifestReceiptsMax
	if puts := cc.puts.Load() - before; puts != int64(n)+2*batches {
		t.Fatalf("%d writes took %d PUTs, want %d (one each, two per batch of %d)", n, puts, int64(n)+2*batches, objgate.ManifestReceiptsMax)
	}
	for _, h := range []*harness{a, fresh} {
		ans, err := h.g.QueryOperation(ctx, r, "op-a", 5)
		if err != nil || ans.Verdict != gate.VerdictAccepted || len(ans.Receipts) != n {
			t.Fatalf("query: %d receipts, %s, %v", len(ans.Receipts), ans.Verdict, err)
		}
		for i := range rcpts {
			if ans.Receipts[i].ID() != rcpts[i].ID() {
				t.Fatalf("receipt %d: %s, want %s", i+1, ans.Receipts[i].ID(), rcpts[i].ID())
			}
		}
		for i := range rcpts { // as a downstream target asks (gate.UpstreamReceipts)
			got, err := h.g.ReceiptAt(ctx, r, 5, uint64(i+1))
			if err != nil || got == nil || got.ID() != rcpts[i].ID() {
				t.Fatalf("ReceiptAt segment %d: %v %v", i+1, got, err)
			}
		}
		if got, err := h.g.ReceiptAt(ctx, r, 5, uint64(n+1)); err != nil || got != nil {
			t.Fatalf("ReceiptAt past the last segment: %v %v", got, err)
		}
		if got, err := h.g.ReceiptAt(ctx, r, 4, 1); err != nil || got != nil {
			t.Fatalf("ReceiptAt of a fence never accepted: %v %v", got, err)
		}
		// Segment 2 is in the first batch.
		rc, err := h.Apply(ctx, "worker-a", iss.Mutation(w(5, "op-a"), 2, "a2"), "a2")
		if gate.OutcomeOf(err) != gate.Replayed || rc.ID() != rcpts[1].ID() {
			t.Fatalf("replay of segment 2: %v %s", err, rc.ID())
		}
		_, err = h.Apply(ctx, "worker-a", iss.Mutation(w(5, "op-a"), 3, "other"), "other")
		if gate.OutcomeOf(err) != gate.Quarantined {
			t.Fatalf("segment 3 with another payload: %v", err)
		}
	}
	// A later fence moves on; another grant for fence 5 at an old
	// position is then a regression, known only from the receipt there
	// in a batch (its status, EXPIRED, would make it merely stale).
	if _, err := a.Apply(ctx, "worker-a", iss.Mutation(w(6, "op-b"), 1, "b1"), "b1"); err != nil {
		t.Fatal(err)
	}
	other := iss.Later(2e9)
	_, err := fresh.Apply(ctx, "worker-a", other.WithStatus(other.Mutation(w(5, "op-a"), 4, "a4"), grant.StateExpired), "a4")
	if gate.OutcomeOf(err) != gate.FenceRegression {
		t.Fatalf("another grant at fence 5 segment 4: %v", err)
	}
	if st, err := fresh.State(ctx, r); err != nil || !st.Paused {
		t.Fatalf("not paused: %+v %v", st, err)
	}
}

func TestInlineUpToTheThreshold(t *testing.T) {
	ctx := context.Background()
	hs, cc, iss := bucketGates(t, 2)
	a, fresh := hs[0], hs[1]
	const r = "obj/inline"
	w := gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "l", OperationID: "op", Fence: 2}
	for seq, size := range []int{10, objgate.InlineBytesMax, objgate.InlineBytesMax + 1, 3} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte('a' + seq)
		}
		before := cc.puts.Load()
		if _, err := a.g.Apply(ctx, "worker-a", iss.Mutation(w, uint64(seq+1), fmt.Sprint(seq)), func(context.Context, objgate.Current) ([]byte, error) {
			return body, nil
		}); err != nil {
			t.Fatal(err)
		}
		want := int64(1)
		if size > objgate.InlineBytesMax {
			want = 2 // the object, then the manifest
		}
		if puts := cc.puts.Load() - before; seq > 0 && puts != want {
			t.Fatalf("%d bytes: %d PUTs, want %d", size, puts, want)
		}
		got, err := fresh.g.Read(ctx, r)
		if err != nil || string(got) != string(body) {
			t.Fatalf("%d bytes: read %d bytes %v", size, len(got), err)
		}
	}
}

func TestReceiptsHeldIsConfigurable(t *testing.T) {
	ctx := context.Background()
	_, cc, iss := bucketGates(t, 0)
	open := func(n int) (*objgate.Gate, error) {
		return objgate.Open(ctx, objgate.Config{Client: cc, Bucket: cc.bucket, Policy: gate.Policy{Verifier: iss.Verifier},
			Clock: fakeclock.New(iss.Now.Add(time.Second)), ReceiptsHeld: n})
	}
	for _, n := range []int{-1, objgate.ManifestReceiptsMax + 1} {
		if _, err := open(n); err == nil {
			t.Errorf("ReceiptsHeld %d accepted", n)
		}
	}
	g, err := open(2)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{g: g}
	w := gatetest.Writer{Resource: "obj/held-2", Owner: "worker-a", Lease: "op", OperationID: "op", Fence: 3}
	before := cc.puts.Load()
	const n = 7
	for seq := 1; seq <= n; seq++ {
		p := fmt.Sprint("p", seq)
		if _, err := h.Apply(ctx, "worker-a", iss.Mutation(w, uint64(seq), p), p); err != nil {
			t.Fatal(err)
		}
	}
	// Writes 3, 5 and 7 find two receipts held and write them out first.
	if puts := cc.puts.Load() - before; puts != n+2*3 {
		t.Fatalf("%d writes holding 2 receipts took %d PUTs, want %d", n, puts, n+2*3)
	}
	if ans, err := g.QueryOperation(ctx, "obj/held-2", "op", 3); err != nil || len(ans.Receipts) != n {
		t.Fatalf("query: %d receipts, %v", len(ans.Receipts), err)
	}
}
