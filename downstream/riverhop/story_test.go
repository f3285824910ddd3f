// This file proves the hand-off end to end on SQLite and PostgreSQL, with
// the target in the upstream database and in its own: A's accepted writes
// enqueue jobs and A pauses with them in flight; B takes over, writes, and
// its jobs run; A's late jobs are STALE_OWNER at the target and B's effect
// stands; no job's effect is applied twice. The negative control runs the
// same story with a worker that skips the target's gate, and A's late job
// overwrites B's effect.
package riverhop_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/downstream/riverhop"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// holding delays the jobs hold picks until release is closed: they are
// dequeued (running in River) but not yet applied, as a job of a paused
// worker or a late delivery.
type holding struct {
	river.WorkerDefaults[riverhop.Args]
	inner   river.Worker[riverhop.Args]
	hold    func(j *gate.Job) bool
	held    chan *gate.Job
	release chan struct{}
}

func (h *holding) Work(ctx context.Context, job *river.Job[riverhop.Args]) error {
	if j, err := gate.DecodeJob(job.Args.Job); err == nil && h.hold(j) {
		h.held <- j
		<-h.release
	}
	return h.inner.Work(ctx, job)
}

// write is one upstream segment under l: ledger[k] = v, and a job that
// mirrors it.
func (w *world) write(l *client.Lease, owner string, seq uint64, k, v string) {
	w.t.Helper()
	m, err := l.Envelope(seq, gatetest.Payload(k+"="+v))
	if err != nil {
		w.t.Fatal(err)
	}
	_, err = w.upGate.Run(w.ctx, w.up, owner, &m, func(ctx context.Context, tx *sql.Tx) error {
		q := `INSERT INTO ledger (k, v, writer, fence) VALUES ($1, $2, $3, $4) ON CONFLICT (k) DO UPDATE SET v = excluded.v, writer = excluded.writer, fence = excluded.fence`
		if w.b.name == "sqlite" {
			q = `INSERT INTO ledger (k, v, writer, fence) VALUES (?, ?, ?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v, writer = excluded.writer, fence = excluded.fence`
		}
		if _, err := tx.ExecContext(ctx, q, k, v, m.OperationID, int64(m.FenceToken)); err != nil {
			return err
		}
		_, _, err := w.outbox.InsertTx(ctx, tx, hop, []byte(k+" "+v), nil)
		return err
	})
	if err != nil {
		w.t.Fatalf("%s's segment %d: %v", owner, seq, err)
	}
}

// story runs the takeover with inner as the worker and returns the
// mirror's rows (k → "v by operation at fence").
func (w *world) story(inner river.Worker[riverhop.Args], lateKind river.EventKind) map[string]string {
	t := w.t
	h := &holding{inner: inner, hold: func(j *gate.Job) bool { return j.OperationID == "settle-a" },
		held: make(chan *gate.Job, 4), release: make(chan struct{})}
	events, _ := w.startRiver(h)
	a, b := w.reg.Worker(clienttest.OwnerA, 1, true), w.reg.Worker(clienttest.OwnerB, 2, true)
	la, err := w.reg.Acquire(w.ctx, a, clienttest.Request("settle-a"))
	if err != nil {
		t.Fatal(err)
	}
	w.write(la, clienttest.OwnerA, 1, "total", "100")
	w.write(la, clienttest.OwnerA, 2, "rows", "10")
	for range 2 {
		select {
		case <-h.held: // A's jobs are dequeued and stuck
		case <-time.After(wait):
			t.Fatal("A's jobs were never dequeued")
		}
	}
	w.reg.Clock.Advance(ttl + 2*time.Second) // A is paused past its TTL
	lb, err := w.reg.Acquire(w.ctx, b, clienttest.Request("settle-b"))
	if err != nil {
		t.Fatalf("B takes over: %v", err)
	}
	if lb.Grant().FenceToken <= la.Grant().FenceToken {
		t.Fatalf("B's fence %d not above A's %d", lb.Grant().FenceToken, la.Grant().FenceToken)
	}
	w.write(lb, clienttest.OwnerB, 1, "total", "200")
	w.write(lb, clienttest.OwnerB, 2, "rows", "20")
	w.awaitEvents(events, river.EventKindJobCompleted, 2) // B's jobs
	close(h.release)                                      // A's jobs arrive late
	w.awaitEvents(events, lateKind, 2)
	return w.mirror()
}

func (w *world) mirror() map[string]string {
	rows, err := w.down.QueryContext(w.ctx, `SELECT k, v, writer, fence FROM mirror ORDER BY k`)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v, writer string
		var fence int64
		if err := rows.Scan(&k, &v, &writer, &fence); err != nil {
			w.t.Fatal(err)
		}
		out[k] = v + " by " + writer
	}
	return out
}

func TestTakeoverLateJobsRejectedDownstream(t *testing.T) {
	forEachLayout(t, func(t *testing.T, w *world) {
		calls := map[string]int{}
		got := w.story(w.worker(calls), river.EventKindJobCancelled)
		want := map[string]string{"total": "200 by settle-b", "rows": "20 by settle-b"}
		if got["total"] != want["total"] || got["rows"] != want["rows"] || len(got) != 2 {
			t.Fatalf("mirror %v, want B's %v", got, want)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, k := range []string{"1/1", "1/2"} { // A: fence 1, jobs 1 and 2
			if o := w.outcomes[k]; len(o) != 1 || o[0] != gate.StaleOwner || calls[k] != 0 {
				t.Fatalf("A's job %s: outcomes %v, handler calls %d; want one STALE_OWNER, no call", k, o, calls[k])
			}
		}
		for _, k := range []string{"2/1", "2/2"} {
			if o := withoutGaps(w.outcomes[k]); len(o) != 1 || o[0] != gate.Accepted || calls[k] != 1 {
				t.Fatalf("B's job %s: outcomes %v, handler calls %d; want one ACCEPTED, one call", k, o, calls[k])
			}
		}
		target, _ := gate.JobTarget(clienttest.Resource, hop)
		st, err := w.target.State(w.ctx, w.down, target)
		if err != nil || st.HighestFence != 2 || st.LastSegmentSeq != 2 {
			t.Fatalf("target state %+v %v, want fence 2, job 2", st, err)
		}
		ans, err := w.target.QueryOperation(w.ctx, w.down, target, "settle-a", 1)
		if err != nil || ans.Verdict != gate.VerdictProvenAbsent {
			t.Fatalf("A's jobs at the target: %+v %v, want PROVEN_ABSENT", ans, err)
		}
	})
}

// unfenced applies a job's effect with no gate at the target: the
// upstream accept happened, so it looks legitimate. Negative control only.
type unfenced struct {
	river.WorkerDefaults[riverhop.Args]
	w *world
}

func (u *unfenced) Work(ctx context.Context, job *river.Job[riverhop.Args]) error {
	j, err := gate.DecodeJob(job.Args.Job)
	if err != nil {
		return err
	}
	tx, err := u.w.down.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := mirrorWrite(ctx, tx, u.w.b, j, job.Args.Payload); err != nil {
		return err
	}
	return tx.Commit()
}

func TestNegativeControlUnfencedWorkerLetsLateJobOverwrite(t *testing.T) {
	b := backends[0] // the story is the same on every backend
	w := newWorld(t, b, false)
	got := w.story(&unfenced{w: w}, river.EventKindJobCompleted)
	if got["total"] != "100 by settle-a" {
		t.Fatalf("mirror %v: without the target's fence A's late job should have overwritten B's total; the story cannot fail", got)
	}
}

func withoutGaps(os []gate.Outcome) []gate.Outcome {
	var out []gate.Outcome
	for _, o := range os {
		if o != gate.SegmentGap {
			out = append(out, o)
		}
	}
	return out
}
