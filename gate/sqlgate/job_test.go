// This file proves ApplyJob on each database: a job enqueued by an
// accepted write (its fence, segment and receipt taken from
// AcceptingFrom) is applied at its target once — a re-run is REPLAYED —
// in job order, without a status proof, and is refused without its
// upstream receipt, for a superseded owner, and in shadow-let-through.
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestJobsSQLite(t *testing.T)   { testJobs(t, sqliteBackend) }
func TestJobsPostgres(t *testing.T) { testJobs(t, postgresBackend) }

const jobHop = "mirror"

// upstreamWithJob applies m and, inside its accept, builds the job of
// jobSeq it would enqueue.
func (e *env) upstreamWithJob(m *gate.Mutation, jobSeq uint64, payload string) *gate.Job {
	e.t.Helper()
	var j *gate.Job
	_, err := e.g.Run(e.ctx, e.db, owner, m, func(ctx context.Context, tx *sql.Tx) error {
		a, ok := sqlgate.AcceptingFrom(ctx)
		if !ok {
			return errors.New("no accept in the business function's context")
		}
		target, err := gate.JobTarget(m.Resource, jobHop)
		if err != nil {
			return err
		}
		j = &gate.Job{Target: target, Resource: m.Resource, OperationID: m.OperationID, FenceToken: m.FenceToken,
			SegmentSeq: m.SegmentSeq, JobSeq: jobSeq, PayloadDigest: gatetest.Payload(payload),
			UpstreamReceipt: a.Receipt.Digest(), Grant: m.Grant, GrantProof: m.GrantProof}
		return write(m, "upstream")(ctx, tx)
	})
	if err != nil {
		e.t.Fatalf("upstream write: %v", err)
	}
	return j
}

func (e *env) runJob(j *gate.Job, payload string) (gate.Receipt, error) {
	return e.g.RunJob(e.ctx, e.db, jobHop, j, nil, func(ctx context.Context, tx *sql.Tx) error {
		if a, ok := sqlgate.AcceptingFrom(ctx); !ok || a.Job != j {
			return errors.New("the job's business function does not see its job")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, $2, $3, $4)`,
			j.Target, int64(j.FenceToken), int64(j.JobSeq), payload)
		return err
	})
}

func testJobs(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "invoice-batch/jobs"
	a1 := e.upstreamWithJob(e.iss.Mutation(wr(r, 1, "op-a"), 1, "a1"), 1, "ja1")
	a2 := e.upstreamWithJob(e.iss.Mutation(wr(r, 1, "op-a"), 2, "a2"), 2, "ja2")
	e.clock.Advance(time.Minute) // every status proof has expired
	if _, err := e.runJob(a2, "ja2"); !errors.Is(err, gate.ErrSegmentGap) {
		t.Fatalf("job 2 before job 1: %v, want SEGMENT_GAP", err)
	}
	if _, err := e.runJob(a1, "ja1"); err != nil {
		t.Fatalf("job 1 a minute after its accept: %v", err)
	}
	if _, err := e.runJob(a1, "ja1"); !errors.Is(err, gate.ErrReplayed) {
		t.Fatalf("job 1 re-run: %v, want REPLAYED", err)
	}
	forged := *a2
	forged.SegmentSeq = 3 // no upstream accept of segment 3
	if _, err := e.runJob(&forged, "ja2"); !errors.Is(err, gate.ErrNotHeld) || !errors.Is(err, gate.ErrNoUpstreamReceipt) {
		t.Fatalf("job without an upstream receipt: %v, want NOT_HELD (no upstream receipt)", err)
	}
	e.iss.Now = e.iss.Now.Add(time.Minute)
	b1 := e.upstreamWithJob(e.iss.Mutation(wr(r, 2, "op-b"), 1, "b1"), 1, "jb1")
	if _, err := e.runJob(b1, "jb1"); err != nil {
		t.Fatalf("newer owner's job: %v", err)
	}
	if _, err := e.runJob(a2, "ja2"); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("superseded owner's late job: %v, want STALE_OWNER", err)
	}
	target, _ := gate.JobTarget(r, jobHop)
	if st := e.state(target); st.HighestFence != 2 || st.LastSegmentSeq != 1 {
		t.Fatalf("target state %+v, want fence 2 job 1", st)
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE resource = $1`, target); n != 2 {
		t.Fatalf("%d job effects, want 2 (a1, b1)", n)
	}
	ans, err := e.g.QueryOperation(e.ctx, e.db, target, "op-a", 1)
	if err != nil || ans.Verdict != gate.VerdictAccepted || len(ans.Receipts) != 1 {
		t.Fatalf("operation query at the target: %+v %v", ans, err)
	}
	// A shadowed rejection runs the business function with no accept.
	const sr = "invoice-batch/shadowed"
	if err := e.g.SetMode(e.ctx, e.db, sr, gate.ModeShadow, "op"); err != nil {
		t.Fatal(err)
	}
	e.upstreamWithJob(e.iss.Mutation(wr(sr, 2, "op-b"), 1, "b1"), 1, "jb1")
	var sawAccept bool
	stale := e.iss.Mutation(wr(sr, 1, "op-a"), 1, "a1")
	if _, err := e.g.Run(e.ctx, e.db, owner, stale, func(ctx context.Context, tx *sql.Tx) error {
		_, sawAccept = sqlgate.AcceptingFrom(ctx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if sawAccept {
		t.Fatal("a stale write let through by shadow mode saw an accept: its jobs would claim a receipt it has not")
	}
	if e.g.Capability() != gate.CapabilityFencedWrite {
		t.Fatalf("capability %s", e.g.Capability())
	}
}
