package downstream

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// Handler applies one job's effect in tx, the target's transaction, which
// commits it with the target's receipt. It runs once per job: a re-run of
// an applied job is REPLAYED and does not call it.
type Handler func(ctx context.Context, tx *sql.Tx, j *gate.Job, payload []byte) error

// Errors of a job that no gate decision can help: its transport should
// drop it.
var (
	ErrUnknownHop    = errors.New("downstream: no handler for the job's hop")
	ErrPayloadDigest = errors.New("downstream: payload does not match the job's digest")
)

// Applier applies delivered jobs through their target's gate, for any
// transport: it decodes the job, checks the payload against its digest,
// and runs the hop's handler under Gate.RunJob.
type Applier struct {
	// Gate and DB are the target's gate and database. Required.
	Gate *sqlgate.Gate
	DB   *sql.DB
	// Upstream holds the upstream receipts; nil when the targets share
	// DB and the gate's tables with the upstream resources.
	Upstream gate.UpstreamReceipts
	// Handlers by hop. Required.
	Handlers map[string]Handler
	// OnOutcome, optional, is told every decision (for logs and tests).
	OnOutcome func(j *gate.Job, outcome gate.Outcome, err error)
}

// Apply applies the job whose wire form (gate.DecodeJob) is job, with
// payload, for hop. It returns the target's receipt and the gate's error
// (as sqlgate.Gate.Apply's); Disposition says what the transport should
// do with it.
func (a *Applier) Apply(ctx context.Context, hop string, job, payload []byte) (gate.Receipt, error) {
	j, err := gate.DecodeJob(job)
	if err != nil {
		return gate.Receipt{}, err
	}
	h := a.Handlers[hop]
	switch {
	case h == nil:
		err = fmt.Errorf("%w %q", ErrUnknownHop, hop)
	case PayloadDigest(payload) != j.PayloadDigest:
		err = fmt.Errorf("%w: job %s/%d", ErrPayloadDigest, j.Target, j.JobSeq)
	}
	if err != nil {
		a.observe(j, "", err)
		return gate.Receipt{}, err
	}
	r, err := a.Gate.RunJob(ctx, a.DB, hop, j, a.Upstream, func(ctx context.Context, tx *sql.Tx) error {
		return h(ctx, tx, j, payload)
	})
	a.observe(j, gate.OutcomeOf(err), err)
	return r, err
}

func (a *Applier) observe(j *gate.Job, o gate.Outcome, err error) {
	if a.OnOutcome != nil {
		a.OnOutcome(j, o, err)
	}
}

// Disposition is what a transport does with a delivered job after Apply.
type Disposition int

// Dispositions.
const (
	// Done: applied now or before (ACCEPTED, REPLAYED): acknowledge.
	Done Disposition = iota
	// Later: an earlier job of its fence has not been applied
	// (SEGMENT_GAP): deliver it again after a short delay.
	Later
	// Drop: it will never apply (STALE_OWNER, no upstream receipt, a bad
	// proof, quarantine, an unknown hop, a payload that is not its
	// digest's): never deliver it again.
	Drop
	// Retry: the outcome is not known (a handler or database error):
	// deliver it again.
	Retry
)

// DispositionOf maps Apply's error.
func DispositionOf(err error) Disposition {
	o := gate.OutcomeOf(err)
	switch {
	case gate.IsSuccess(err):
		return Done
	case o == gate.SegmentGap:
		return Later
	case o != "" || errors.Is(err, ErrUnknownHop) || errors.Is(err, ErrPayloadDigest):
		return Drop
	}
	return Retry
}
