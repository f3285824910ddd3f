package riverhop

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/gate"
)

// GapSnoozeDefault is how long a job waits when its predecessor under the
// same fence has not been applied yet (SEGMENT_GAP): long enough not to
// spin on the target's fence row, short against a job's usual latency.
const GapSnoozeDefault = 100 * time.Millisecond

// Worker is the River worker of fenced jobs: each job runs through the
// target's gate (downstream.Applier), its handler only if the target
// accepts it.
//
// What River is told: applied or REPLAYED → completed; SEGMENT_GAP →
// snoozed for GapSnooze (not an attempt); any other gate rejection
// (STALE_OWNER above all), an unknown hop, or a payload that does not
// match its digest → cancelled, never retried; a handler or database
// error → River's retry.
type Worker struct {
	river.WorkerDefaults[Args]
	downstream.Applier
	// GapSnooze, optional, defaults to GapSnoozeDefault.
	GapSnooze time.Duration
}

// Work is River's entry point.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	_, err := w.Apply(ctx, job.Args)
	switch downstream.DispositionOf(err) {
	case downstream.Done:
		return nil
	case downstream.Later:
		if w.GapSnooze > 0 {
			return river.JobSnooze(w.GapSnooze)
		}
		return river.JobSnooze(GapSnoozeDefault)
	case downstream.Drop:
		return river.JobCancel(err)
	}
	return err
}

// Apply runs one job's arguments through the target's gate.
func (w *Worker) Apply(ctx context.Context, a Args) (gate.Receipt, error) {
	return w.Applier.Apply(ctx, a.Hop, a.Job, a.Payload)
}
