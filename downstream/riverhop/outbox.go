// Package riverhop is River (github.com/riverqueue/river) as the transport
// of fenced jobs: an accepted write enqueues them with InsertTx in its own
// transaction (Outbox), and a River worker applies each through the
// target's gate (Worker), so a superseded owner's job is STALE_OWNER and a
// re-run after a crash is REPLAYED.
//
// Use a River driver over the same *sql.DB the upstream gate runs on
// (riversqlite, or riverdatabasesql over pgx's stdlib on PostgreSQL): the
// job and the write commit or roll back together, and River does not
// deliver a job before its transaction commits.
//
//	seq, _ := downstream.NewSequencer(sqlgate.SQLite, "")
//	out := &riverhop.Outbox{Client: riverClient, Seq: seq}
//	g.Run(ctx, db, caller, m, func(ctx context.Context, tx *sql.Tx) error {
//		// … the write …
//		_, _, err := out.InsertTx(ctx, tx, "mail", payload, nil)
//		return err
//	})
package riverhop

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/gate"
)

// Kind is the River job kind of every fenced job; Args.Hop tells hops apart.
const Kind = "fencegate_job"

// Args is the River job of one fenced hand-off.
type Args struct {
	// Hop names the downstream hop (and so the target and the handler).
	Hop string `json:"hop"`
	// Job is the gate.Job wire form (gate.DecodeJob).
	Job json.RawMessage `json:"job"`
	// Payload is the job's own payload, opaque to the gate. It travels as
	// base64 text, which a jsonb column keeps byte for byte, so its
	// digest (the job's PayloadDigest) survives the queue.
	Payload []byte `json:"payload"`
}

// Kind is River's job kind.
func (Args) Kind() string { return Kind }

// Outbox enqueues fenced jobs from inside an accepting business function.
type Outbox struct {
	// Client is a River client over the upstream database (it may be an
	// insert-only client). Required.
	Client *river.Client[*sql.Tx]
	// Seq numbers the jobs (its table migrated on the upstream database).
	// Required.
	Seq *downstream.Sequencer
}

// InsertTx builds the job of hop for the accept running in ctx
// (downstream.Sequencer.NewJob) and inserts it into River in tx, the
// accepting transaction. Errors: downstream.ErrNotAccepting outside an
// accepting business function (shadow mode letting a rejected write
// through included), downstream.ErrChainedJob under a job, or River's.
// Returning the error from the business function rolls the write back.
func (o *Outbox) InsertTx(ctx context.Context, tx *sql.Tx, hop string, payload []byte, opts *river.InsertOpts) (*gate.Job, *rivertype.JobInsertResult, error) {
	if o.Client == nil || o.Seq == nil {
		return nil, nil, errors.New("riverhop: Outbox needs a Client and a Seq")
	}
	j, err := o.Seq.NewJob(ctx, tx, hop, payload)
	if err != nil {
		return nil, nil, err
	}
	wire, err := j.MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("riverhop: encode job: %w", err)
	}
	res, err := o.Client.InsertTx(ctx, tx, Args{Hop: hop, Job: wire, Payload: payload}, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("riverhop: insert %s job %d: %w", j.Target, j.JobSeq, err)
	}
	return j, res, nil
}
