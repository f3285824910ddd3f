// This file proves memgate applies handed-off jobs at their target by the
// upstream receipt and the fence (gate.DecideJob): a newer owner's job
// lands, a superseded owner's is STALE_OWNER, a re-run is REPLAYED without
// running the effect again, and a job no accepted write stands behind has
// no authority.
package memgate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestJobsAtTheirTarget(t *testing.T) {
	g, iss := newGate(t, gate.ModeEnforce)
	ctx := context.Background()
	target, err := gate.JobTarget(res, "mail")
	if err != nil {
		t.Fatal(err)
	}
	jobOf := func(m *gate.Mutation, rc gate.Receipt, seq uint64) *gate.Job {
		return &gate.Job{Target: target, Resource: m.Resource, OperationID: m.OperationID, FenceToken: m.FenceToken,
			SegmentSeq: m.SegmentSeq, JobSeq: seq, PayloadDigest: gatetest.Payload("mail"), UpstreamReceipt: rc.Digest(),
			Grant: m.Grant, GrantProof: m.GrantProof}
	}
	write := func(fence uint64, op string) *gate.Job {
		m := iss.Mutation(w(fence, op), 1, op)
		rc, err := g.Apply(ctx, owner, m, func() error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return jobOf(m, rc, 1)
	}
	jobA, jobB := write(1, "op-a"), write(2, "op-b")
	effects := 0
	apply := func(j *gate.Job) error {
		_, err := g.ApplyJob(ctx, "mail", j, nil, func() error { effects++; return nil })
		return err
	}
	if err := apply(jobB); err != nil {
		t.Fatalf("the newer owner's job: %v", err)
	}
	if err := apply(jobA); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("the superseded owner's late job: %v", err)
	}
	if err := apply(jobB); !errors.Is(err, gate.ErrReplayed) {
		t.Fatalf("a re-run: %v", err)
	}
	forged := *jobB
	forged.FenceToken, forged.JobSeq = 2, 2
	forged.UpstreamReceipt = gatetest.Payload("no such receipt")
	if err := apply(&forged); !errors.Is(err, gate.ErrNoUpstreamReceipt) {
		t.Fatalf("a job no accepted write stands behind: %v", err)
	}
	if effects != 1 {
		t.Fatalf("%d effects, want exactly 1", effects)
	}
}
