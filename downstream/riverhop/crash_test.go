// This file proves that a worker crash does not apply a job twice, on
// SQLite and PostgreSQL: a crash after the job's effect committed but
// before River recorded the job done re-runs it into REPLAYED (the
// handler is not called again), and a crash after dequeue but before the
// apply re-runs it into its one ACCEPTED.
package riverhop_test

import (
	"context"
	"testing"

	"github.com/riverqueue/river"

	"github.com/fencegate/fencegate/downstream/riverhop"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/clienttest"
)

// crashing panics on a job's first attempt, before or after the inner
// worker applied it, as a worker process dying there would: River never
// hears that the attempt finished, and runs the job again.
type crashing struct {
	river.WorkerDefaults[riverhop.Args]
	inner *riverhop.Worker
	after map[uint64]bool // by job sequence: crash after the apply, else before
}

func (c *crashing) Work(ctx context.Context, job *river.Job[riverhop.Args]) error {
	j, err := gate.DecodeJob(job.Args.Job)
	if err != nil || job.Attempt > 1 {
		return c.inner.Work(ctx, job)
	}
	after, ok := c.after[j.JobSeq]
	if !ok {
		return c.inner.Work(ctx, job)
	}
	if after {
		if _, err := c.inner.Apply(ctx, job.Args); err != nil {
			return err // not applied (a gap): no crash to test on this attempt
		}
	}
	panic("worker crashed")
}

func TestCrashReRunsIntoReplayed(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			w := newWorld(t, b, false)
			calls := map[string]int{}
			inner := w.worker(calls)
			events, _ := w.startRiver(&crashing{inner: inner, after: map[uint64]bool{1: true, 2: false}})
			a := w.reg.Worker(clienttest.OwnerA, 1, true)
			la, err := w.reg.Acquire(w.ctx, a, clienttest.Request("settle-a"))
			if err != nil {
				t.Fatal(err)
			}
			w.write(la, clienttest.OwnerA, 1, "total", "100")
			w.write(la, clienttest.OwnerA, 2, "rows", "10")
			done := w.awaitEvents(events, river.EventKindJobCompleted, 2)
			w.mu.Lock()
			defer w.mu.Unlock()
			if o := withoutGaps(w.outcomes["1/1"]); len(o) != 2 || o[0] != gate.Accepted || o[1] != gate.Replayed {
				t.Fatalf("job 1 (crash after apply): outcomes %v, want ACCEPTED then REPLAYED", o)
			}
			if o := withoutGaps(w.outcomes["1/2"]); len(o) != 1 || o[0] != gate.Accepted {
				t.Fatalf("job 2 (crash before apply): outcomes %v, want one ACCEPTED", o)
			}
			for k, n := range calls {
				if n != 1 {
					t.Fatalf("job %s's effect applied %d times", k, n)
				}
			}
			if len(calls) != 2 {
				t.Fatalf("handler calls %v, want jobs 1/1 and 1/2 once each", calls)
			}
			for _, ev := range done {
				if ev.Job.Attempt < 2 {
					t.Fatalf("job %d completed at attempt %d: the crash did not happen", ev.Job.ID, ev.Job.Attempt)
				}
			}
			if got := w.mirror(); got["total"] != "100 by settle-a" || got["rows"] != "10 by settle-a" {
				t.Fatalf("mirror %v", got)
			}
		})
	}
}

// unfencedCrashing applies the job with no gate and crashes after the
// first attempt's apply. Negative control only.
type unfencedCrashing struct {
	unfenced
	applied map[int64]int
}

func (u *unfencedCrashing) Work(ctx context.Context, job *river.Job[riverhop.Args]) error {
	if err := u.unfenced.Work(ctx, job); err != nil {
		return err
	}
	u.w.mu.Lock()
	u.applied[job.ID]++
	u.w.mu.Unlock()
	if job.Attempt == 1 {
		panic("worker crashed")
	}
	return nil
}

func TestNegativeControlCrashWithoutTargetReceiptsAppliesTwice(t *testing.T) {
	w := newWorld(t, backends[0], false)
	u := &unfencedCrashing{unfenced: unfenced{w: w}, applied: map[int64]int{}}
	events, _ := w.startRiver(u)
	la, err := w.reg.Acquire(w.ctx, w.reg.Worker(clienttest.OwnerA, 1, true), clienttest.Request("settle-a"))
	if err != nil {
		t.Fatal(err)
	}
	w.write(la, clienttest.OwnerA, 1, "total", "100")
	ev := w.awaitEvents(events, river.EventKindJobCompleted, 1)[0]
	w.mu.Lock()
	defer w.mu.Unlock()
	if u.applied[ev.Job.ID] != 2 {
		t.Fatalf("applied %d times: without the target's receipts the re-run should apply the effect again; the control cannot fail", u.applied[ev.Job.ID])
	}
}
