package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
)

// ApplyJob is Apply for a job that an accepted upstream write handed off:
// it authenticates the job for hop (gate.Policy.AuthenticateJob), locks the
// target's fence row, reads the upstream receipt the job names from
// upstream (nil: this gate's own tables, in tx — the target and its
// upstream resource share the database), decides with gate.DecideJob and,
// if accepted, runs fn and stores the target's receipt in tx. The returns
// are Apply's: REPLAYED for a job already applied (fn does not run again),
// STALE_OWNER for a job of a superseded owner, SEGMENT_GAP for a job whose
// predecessor under its fence has not been applied yet (run it later).
//
// An error from upstream is returned as it is: no decision was made. Job
// decisions are counted with the gate's other decisions (Counters).
func (g *Gate) ApplyJob(ctx context.Context, tx *sql.Tx, hop string, j *gate.Job, upstream gate.UpstreamReceipts, fn BusinessFunc) (gate.Receipt, error) {
	return g.applyJobIn(ctx, sqlTxn{g, tx}, hop, j, upstream, onTx(fn, tx), false)
}

// RunJob is ApplyJob in a transaction of its own, committed as Run commits.
func (g *Gate) RunJob(ctx context.Context, db *sql.DB, hop string, j *gate.Job, upstream gate.UpstreamReceipts, fn BusinessFunc) (gate.Receipt, error) {
	return g.inOwnTx(ctx, db, false, "query the target's receipts", func(t txn, tx *sql.Tx) (gate.Receipt, error) {
		return g.applyJobIn(ctx, t, hop, j, upstream, onTx(fn, tx), true)
	})
}

func (g *Gate) applyJobIn(ctx context.Context, tx txn, hop string, j *gate.Job, upstream gate.UpstreamReceipts, fn func(context.Context) error, ownTx bool) (gate.Receipt, error) {
	d, err := g.applyJob(ctx, tx, hop, j, upstream, fn, ownTx)
	if errors.Is(err, ErrBusiness) || gate.OutcomeOf(err) == "" {
		return gate.Receipt{}, err
	}
	g.counters.Add(d.Outcome)
	return adapt.Result(d, &gate.Mutation{Resource: j.Target, FenceToken: j.FenceToken, OperationID: j.OperationID,
		SegmentSeq: j.JobSeq, PayloadDigest: j.PayloadDigest})
}

func (g *Gate) applyJob(ctx context.Context, tx txn, hop string, j *gate.Job, upstream gate.UpstreamReceipts, fn func(context.Context) error, ownTx bool) (gate.Decision, error) {
	v, err := g.dec.Policy.AuthenticateJob(j, hop)
	if err != nil {
		return gate.Decision{Outcome: gate.OutcomeOf(err), Err: err}, err
	}
	st, prior, guarded, err := g.lockLookup(ctx, tx, &v.Mutation)
	if err != nil {
		return gate.Decision{}, err
	}
	if upstream == nil {
		upstream = txReceipts{g, tx}
	}
	up, err := upstream.ReceiptAt(ctx, j.Resource, j.FenceToken, j.SegmentSeq)
	if err != nil {
		return gate.Decision{}, fmt.Errorf("sqlgate: upstream receipt of job %s/%d/%d: %w", j.Resource, j.FenceToken, j.SegmentSeq, err)
	}
	d := gate.DecideJob(gate.JobInput{Job: j, Verified: v, State: st, Prior: prior, Upstream: up, Now: g.clock.Now()})
	if !d.Proceed {
		if err := g.record(ctx, tx, d, v, prior); err != nil {
			return d, err
		}
		return d, d.Err
	}
	jobFn := func(ctx context.Context) error { return fn(context.WithValue(ctx, jobKey{}, j)) }
	b := business{g: g, tx: tx, d: d, v: v, prior: prior, ownTx: ownTx, guarded: guarded}
	if err := b.run(ctx, jobFn); err != nil {
		return d, err
	}
	return d, d.Err
}

// txReceipts reads upstream receipts from this gate's tables in tx.
type txReceipts struct {
	g  *Gate
	tx txn
}

func (r txReceipts) ReceiptAt(ctx context.Context, resource string, fence, seq uint64) (*gate.Receipt, error) {
	return r.g.receiptAt(ctx, r.tx, resource, fence, seq)
}

// ReceiptsOf returns the receipts of gate g on db as a job's upstream:
// what a worker whose target lives in another database (or under another
// table prefix) passes to ApplyJob.
func ReceiptsOf(g *Gate, db DBTX) gate.UpstreamReceipts { return dbReceipts{g, db} }

type dbReceipts struct {
	g  *Gate
	db DBTX
}

func (r dbReceipts) ReceiptAt(ctx context.Context, resource string, fence, seq uint64) (*gate.Receipt, error) {
	return r.g.receiptAt(ctx, dbtxTxn{r.db}, resource, fence, seq)
}
