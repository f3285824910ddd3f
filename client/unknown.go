package client

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// ReceiptQuerier answers "did this operation happen?" from the resource's
// receipts: gate.Answer with the receipts for the operation ID and the
// resource's highestFence, judged for an attempt under fence (gate.Judge).
// sqlgate.Gate.QueryOperation has this shape once its *sql.DB is bound:
//
//	client.ReceiptQuerierFunc(func(ctx context.Context, r, op string, f uint64) (gate.Answer, error) {
//		return g.QueryOperation(ctx, db, r, op, f)
//	})
type ReceiptQuerier interface {
	QueryOperation(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error)
}

// ReceiptQuerierFunc adapts a function to ReceiptQuerier.
type ReceiptQuerierFunc func(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error)

// QueryOperation calls f.
func (f ReceiptQuerierFunc) QueryOperation(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error) {
	return f(ctx, resource, operationID, fence)
}

// Unknown is a write whose outcome is unknown (MUTATION_UNKNOWN): a
// timeout, a lost ACK, a commit error. SegmentSeq 0 asks about the whole
// operation.
type Unknown struct {
	Resource      string
	OperationID   string
	FenceToken    uint64
	SegmentSeq    uint64
	PayloadDigest grant.Digest
	// Since is when the outcome became unknown (the send or the timeout).
	// Optional: the reconciliation deadline counts from it, else from the
	// moment the item is queued.
	Since time.Time
}

// UnknownOf is the Unknown for an envelope whose answer was lost.
func UnknownOf(m gate.Mutation) Unknown {
	return Unknown{Resource: m.Resource, OperationID: m.OperationID, FenceToken: m.FenceToken,
		SegmentSeq: m.SegmentSeq, PayloadDigest: m.PayloadDigest}
}

// Resolution is what became of an Unknown.
type Resolution struct {
	// Verdict: ACCEPTED (reuse Receipt, do not write again), PROVEN_ABSENT
	// (it never happened and never will: acquire a new grant and submit a
	// NEW operation under the new fence) or UNDETERMINED (queued).
	Verdict gate.Verdict
	// Receipt is the resource's receipt for the segment (ACCEPTED only;
	// for a whole-operation query, the last one).
	Receipt *gate.Receipt
	// Answer is the resource's evidence.
	Answer gate.Answer
	// Queued is the reconciliation item (UNDETERMINED with a Queue only).
	Queued *ReconcileItem
}

// ReconcileItem is one write whose outcome is unknown, as a
// ReconcileQueue keeps it.
type ReconcileItem struct {
	ID            int64
	Resource      string
	OperationID   string
	FenceToken    uint64
	SegmentSeq    uint64 // 0: the whole operation
	PayloadDigest grant.Digest
	EnqueuedAt    time.Time // when the outcome became unknown: Enqueue takes it if set, else now
	Deadline      time.Time // EnqueuedAt + the queue's deadline (15 min by default)
	Attempts      int       // reconciliation attempts so far
	LastError     string    // why the last attempt did not settle it
	Alarmed       bool      // the deadline passed and the alarm fired
}

// ReconcileQueue is the durable queue of writes a Resolver could not
// settle: UNDETERMINED, to be asked about again until settled, with a
// deadline that is measured and alarmed. client/reconcile is the SQLite
// implementation; the interface keeps package client free of it.
type ReconcileQueue interface {
	// Enqueue records it once (by resource, operation and segment) and
	// returns it as stored; a second Enqueue of the same write returns the
	// first without moving its deadline.
	Enqueue(ctx context.Context, it ReconcileItem) (ReconcileItem, error)
	// Open returns the open items, oldest first.
	Open(ctx context.Context) ([]ReconcileItem, error)
	// Resolve closes item id with the verdict that settled it.
	Resolve(ctx context.Context, id int64, verdict string) error
	// Attempted records an attempt on item id that did not settle it.
	Attempted(ctx context.Context, id int64, why string) error
	// CheckDeadlines fires the alarm for open items past their deadline
	// (once each) and returns them.
	CheckDeadlines(ctx context.Context) ([]ReconcileItem, error)
}

// Resolver settles MUTATION_UNKNOWN by operation ID against the resource's
// receipts. Receipts is required; Queue is optional (without it an
// UNDETERMINED resolution is returned but not recorded).
//
// While the lease is still HELD, a simpler recovery exists: send the same
// envelope again (Refresh it if its proof aged). The gate returns the
// original receipt for an accepted segment (REPLAYED) or accepts it now.
// The Resolver is for when that is no longer possible.
type Resolver struct {
	Receipts ReceiptQuerier
	Queue    ReconcileQueue
}

// Resolve asks the resource about u and, when the answer is UNDETERMINED,
// records u in the reconciliation queue (once; its deadline is not pushed
// back by asking again).
func (r *Resolver) Resolve(ctx context.Context, u Unknown) (Resolution, error) {
	a, err := r.Receipts.QueryOperation(ctx, u.Resource, u.OperationID, u.FenceToken)
	if err != nil {
		return Resolution{}, fmt.Errorf("client: resolve %s/%s: %w", u.Resource, u.OperationID, err)
	}
	res, err := u.Judge(a)
	if err != nil || res.Verdict != gate.VerdictUndetermined || r.Queue == nil {
		return res, err
	}
	it, err := r.Queue.Enqueue(ctx, ReconcileItem{Resource: u.Resource, OperationID: u.OperationID,
		FenceToken: u.FenceToken, SegmentSeq: u.SegmentSeq, PayloadDigest: u.PayloadDigest, EnqueuedAt: u.Since})
	if err != nil {
		return res, fmt.Errorf("client: resolve %s/%s: %w", u.Resource, u.OperationID, err)
	}
	res.Queued = &it
	return res, nil
}

// Judge is the Resolver's decision, pure: what a, the resource's answer
// about u's operation (its receipts and highestFence, as a ReceiptQuerier
// returns them), says became of u. For a segment it narrows the
// operation's verdict: ACCEPTED only if a receipt for (fence, segment)
// exists, and its payload is u's (a receipt with another payload is
// ErrBadAnswer: the resource contradicts the write); otherwise
// PROVEN_ABSENT when highestFence is above the fence, else UNDETERMINED.
// For the whole operation (SegmentSeq 0) it is the operation's verdict,
// with the last receipt. Resolve and Reconcile decide with it; a driver
// that carries the question to the resource itself (the simulator, over
// its simulated network) calls it with the answer.
func (u Unknown) Judge(a gate.Answer) (Resolution, error) {
	res := Resolution{Answer: a}
	if u.SegmentSeq == 0 {
		res.Verdict = a.Verdict
		if n := len(a.Receipts); n > 0 {
			res.Receipt = &a.Receipts[n-1]
		}
		return res, nil
	}
	for i := range a.Receipts {
		rc := &a.Receipts[i]
		if rc.FenceToken != u.FenceToken || rc.SegmentSeq != u.SegmentSeq {
			continue
		}
		if !u.PayloadDigest.IsZero() && rc.PayloadDigest != u.PayloadDigest {
			return res, fmt.Errorf("%w: %s/%s segment %d was accepted with payload %s, not %s",
				ErrBadAnswer, u.Resource, u.OperationID, u.SegmentSeq, rc.PayloadDigest, u.PayloadDigest)
		}
		res.Verdict, res.Receipt = gate.VerdictAccepted, rc
		return res, nil
	}
	res.Verdict = gate.Judge(nil, a.HighestFence, u.FenceToken).Verdict
	return res, nil
}

// Reconcile re-asks the resource about every open queue item, closes the
// settled ones, records attempts on the rest, and fires the alarm for
// items past their deadline. It returns the resolutions it settled.
func (r *Resolver) Reconcile(ctx context.Context) ([]Resolution, error) {
	if r.Queue == nil {
		return nil, fmt.Errorf("client: reconcile: no queue")
	}
	items, err := r.Queue.Open(ctx)
	if err != nil {
		return nil, err
	}
	var settled []Resolution
	for _, it := range items {
		u := Unknown{Resource: it.Resource, OperationID: it.OperationID, FenceToken: it.FenceToken,
			SegmentSeq: it.SegmentSeq, PayloadDigest: it.PayloadDigest}
		a, err := r.Receipts.QueryOperation(ctx, u.Resource, u.OperationID, u.FenceToken)
		var res Resolution
		if err == nil {
			res, err = u.Judge(a)
		}
		switch {
		case err != nil:
			err = r.Queue.Attempted(ctx, it.ID, err.Error())
		case res.Verdict == gate.VerdictUndetermined:
			err = r.Queue.Attempted(ctx, it.ID, "undetermined: highestFence not above the operation's fence")
		default:
			it := it
			res.Queued = &it
			settled = append(settled, res)
			err = r.Queue.Resolve(ctx, it.ID, string(res.Verdict))
		}
		if err != nil {
			return settled, err
		}
	}
	_, err = r.Queue.CheckDeadlines(ctx)
	return settled, err
}
