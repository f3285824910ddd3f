// This file proves what a store fault in the middle of a write leaves:
// a receipt batch whose pointer landed and whose batch did not leaves the
// receipt query answering from the manifest (the receipts are still
// there), and a manifest replace that committed but was answered 412 (the
// SDK's retry of a PUT whose answer was lost) stands as committed — the
// accept answers ACCEPTED, the regression FENCE_REGRESSION with its
// alarm recorded — instead of being decided again on its own result,
// while another gate's identical decision is not taken for one's own.
package objgate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// faulty is the store with one fault armed at a time.
type faulty struct {
	objgate.API
	mu        sync.Mutex
	failBatch bool // fail the next PUT of a receipt batch (its pointers land)
	lostAck   bool // commit the next conditional manifest PUT, then answer 412
}

func (f *faulty) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.mu.Lock()
	failBatch := f.failBatch && strings.Contains(*in.Key, "/receipts/")
	lostAck := f.lostAck && in.IfMatch != nil
	f.failBatch = f.failBatch && !failBatch
	f.lostAck = f.lostAck && !lostAck
	f.mu.Unlock()
	if failBatch {
		return nil, errors.New("injected: the batch PUT timed out")
	}
	out, err := f.API.PutObject(ctx, in, o...)
	if err == nil && lostAck {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "injected: the retry of a committed PUT"}
	}
	return out, err
}

func faultyGate(t *testing.T) (*harness, *faulty, *gatetest.Issuer) {
	_, cc, iss := bucketGates(t, 0)
	f := &faulty{API: cc}
	g, err := objgate.Open(context.Background(), objgate.Config{Client: f, Bucket: cc.bucket, Policy: gate.Policy{Verifier: iss.Verifier},
		Clock: fakeclock.New(iss.Now.Add(time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{g: g}, f, iss
}

func TestQueryAfterAFailedBatchWrite(t *testing.T) {
	ctx := context.Background()
	h, f, iss := faultyGate(t)
	const r = "obj/failed-batch"
	w := gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "op-a", OperationID: "op-a", Fence: 5}
	write := func(seq int) error {
		p := fmt.Sprintf("a%d", seq)
		_, err := h.Apply(ctx, "worker-a", iss.Mutation(w, uint64(seq), p), p)
		return err
	}
	for seq := 1; seq <= objgate.ManifestReceiptsMax; seq++ {
		if err := write(seq); err != nil {
			t.Fatal(err)
		}
	}
	f.failBatch = true
	if err := write(objgate.ManifestReceiptsMax + 1); err == nil {
		t.Fatal("the write whose batch failed was accepted")
	}
	ans, err := h.g.QueryOperation(ctx, r, "op-a", 5)
	if err != nil || ans.Verdict != gate.VerdictAccepted || len(ans.Receipts) != objgate.ManifestReceiptsMax {
		t.Fatalf("query after a failed batch write: %d receipts, %s, %v; want ACCEPTED with %d", len(ans.Receipts), ans.Verdict, err, objgate.ManifestReceiptsMax)
	}
	if err := write(objgate.ManifestReceiptsMax + 1); err != nil { // the retry writes the batch again
		t.Fatal(err)
	}
	if ans, err := h.g.QueryOperation(ctx, r, "op-a", 5); err != nil || len(ans.Receipts) != objgate.ManifestReceiptsMax+1 {
		t.Fatalf("query after the retry: %d receipts, %v", len(ans.Receipts), err)
	}
}

func TestCommittedReplaceAnsweredConflictStands(t *testing.T) {
	ctx := context.Background()
	h, f, iss := faultyGate(t)
	const r = "obj/lost-ack"
	w := gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "op-a", OperationID: "op-a", Fence: 5}
	if _, err := h.Apply(ctx, "worker-a", iss.Mutation(w, 1, "a1"), "a1"); err != nil {
		t.Fatal(err)
	}
	f.lostAck = true
	if _, err := h.Apply(ctx, "worker-a", iss.Mutation(w, 2, "a2"), "a2"); err != nil {
		t.Fatalf("a committed accept answered 412: %s (%v), want ACCEPTED", gate.OutcomeOf(err), err)
	}
	other := iss.Later(2e9) // another grant at fence 5: a regression
	f.lostAck = true
	_, err := h.Apply(ctx, "worker-a", other.Mutation(w, 3, "a3"), "a3")
	alarms, aerr := h.g.Records(ctx, "alarm", r)
	if gate.OutcomeOf(err) != gate.FenceRegression || aerr != nil || len(alarms) != 1 {
		t.Fatalf("a committed regression answered 412: %s with %d alarm records (%v); want FENCE_REGRESSION and its alarm",
			gate.OutcomeOf(err), len(alarms), aerr)
	}
	if fx, err := h.Effects(ctx, r); err != nil || strings.Join(fx, ",") != "a1,a2" {
		t.Fatalf("content %q %v", fx, err)
	}
}

// Two gates that take the same decision on the same manifest write the
// same state, receipts and content. The one that loses the replace must
// not take the winner's manifest for its own (that would answer
// FENCE_REGRESSION twice and record the alarm twice, where gate/memgate
// answers the second RESOURCE_PAUSED): each replace carries a tag of its
// own, so only a replace's own bytes count as its commit.
func TestSameDecisionOnTwoGatesAnswersOnce(t *testing.T) {
	ctx := context.Background()
	hs, _, iss := bucketGates(t, 2)
	a, b := hs[0], hs[1]
	const r = "obj/same-decision"
	w := gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "op-a", OperationID: "op-a", Fence: 5}
	if _, err := a.Apply(ctx, "worker-a", iss.Mutation(w, 1, "a1"), "a1"); err != nil { // a holds the manifest
		t.Fatal(err)
	}
	regression := iss.Later(2e9).Mutation(w, 2, "a2") // another grant at fence 5
	_, errB := b.Apply(ctx, "worker-a", regression, "a2")
	_, errA := a.Apply(ctx, "worker-a", regression, "a2") // decided on a's copy: the same pause, the same bytes but the tag
	alarms, err := a.g.Records(ctx, "alarm", r)
	if gate.OutcomeOf(errB) != gate.FenceRegression || gate.OutcomeOf(errA) != gate.ResourcePaused || err != nil || len(alarms) != 1 {
		t.Fatalf("b %s, a %s, %d alarm records (%v); want FENCE_REGRESSION, RESOURCE_PAUSED and one alarm",
			gate.OutcomeOf(errB), gate.OutcomeOf(errA), len(alarms), err)
	}
}
