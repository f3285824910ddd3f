package riverhop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// GapSnoozeDefault is how long a job waits when its predecessor under the
// same fence has not been applied yet (SEGMENT_GAP): long enough not to
// spin on the target's fence row, short against a job's usual latency.
const GapSnoozeDefault = 100 * time.Millisecond

// Handler applies one job's effect in tx, the target's transaction, which
// commits it with the target's receipt. It runs once per job: a re-run of
// an applied job is REPLAYED and does not call it.
type Handler func(ctx context.Context, tx *sql.Tx, j *gate.Job, payload []byte) error

// Worker is the River worker of fenced jobs. Each job runs through
// Gate.RunJob on DB: its handler runs only if the target accepts it.
//
// What River is told: applied or REPLAYED → completed; SEGMENT_GAP →
// snoozed for GapSnooze (not an attempt); any other gate rejection
// (STALE_OWNER above all), an unknown hop, or a payload that does not
// match its digest → cancelled, never retried; a handler or database
// error → River's retry.
type Worker struct {
	river.WorkerDefaults[Args]
	// Gate and DB are the target's gate and database. Required.
	Gate *sqlgate.Gate
	DB   *sql.DB
	// Upstream holds the upstream receipts; nil when the targets share
	// DB and the gate's tables with the upstream resources.
	Upstream gate.UpstreamReceipts
	// Handlers by hop. Required.
	Handlers map[string]Handler
	// GapSnooze, optional, defaults to GapSnoozeDefault.
	GapSnooze time.Duration
	// OnOutcome, optional, is told every decision (for logs and tests).
	OnOutcome func(j *gate.Job, outcome gate.Outcome, err error)
}

// ErrUnknownHop cancels a job whose hop has no handler.
var ErrUnknownHop = errors.New("riverhop: no handler for the job's hop")

// ErrPayloadDigest cancels a job whose payload is not the one its digest names.
var ErrPayloadDigest = errors.New("riverhop: payload does not match the job's digest")

// Work is River's entry point.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	_, err := w.Apply(ctx, job.Args)
	return w.riverResult(err)
}

// Apply decodes one job and runs it through the target's gate, returning
// the gate's receipt and error (gate outcomes as Apply's).
func (w *Worker) Apply(ctx context.Context, a Args) (gate.Receipt, error) {
	j, err := gate.DecodeJob(a.Job)
	if err != nil {
		return gate.Receipt{}, err
	}
	h := w.Handlers[a.Hop]
	switch {
	case h == nil:
		err = fmt.Errorf("%w %q", ErrUnknownHop, a.Hop)
	case downstream.PayloadDigest(a.Payload) != j.PayloadDigest:
		err = fmt.Errorf("%w: job %s/%d", ErrPayloadDigest, j.Target, j.JobSeq)
	}
	if err != nil {
		w.observe(j, "", err)
		return gate.Receipt{}, err
	}
	r, err := w.Gate.RunJob(ctx, w.DB, a.Hop, j, w.Upstream, func(ctx context.Context, tx *sql.Tx) error {
		return h(ctx, tx, j, a.Payload)
	})
	w.observe(j, gate.OutcomeOf(err), err)
	return r, err
}

func (w *Worker) observe(j *gate.Job, o gate.Outcome, err error) {
	if w.OnOutcome != nil {
		w.OnOutcome(j, o, err)
	}
}

func (w *Worker) riverResult(err error) error {
	o := gate.OutcomeOf(err)
	switch {
	case gate.IsSuccess(err):
		return nil
	case o == gate.SegmentGap:
		return river.JobSnooze(cmpOr(w.GapSnooze, GapSnoozeDefault))
	case o != "" || errors.Is(err, ErrUnknownHop) || errors.Is(err, ErrPayloadDigest):
		return river.JobCancel(err)
	}
	return err
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
