package sqlgate

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
)

// business runs one business function for a decision that proceeds: an
// accept (the transaction marked as inside an accepting Apply, so the
// coverage guard lets protected writes through and counts them) or a
// shadow-mode rejection (unmarked: protected writes count as ungated).
type business struct {
	g      *Gate
	tx     txn
	d      gate.Decision
	v      *gate.Verified
	prior  *gate.Receipt
	ownTx  bool // Run owns tx: no savepoint needed, a failure rolls back all
	marked bool // lockLookup already marked tx
	// guarded: some table is protected, so an accept must mark tx. When
	// none is, no guard trigger exists to read the mark, and the marker
	// statement is skipped (the count of guarded writes is then 0).
	guarded bool
	// stored: the accept is already stored (a kept speculation), so no
	// finishAccept follows the business change.
	stored bool
}

const savepoint = "fencegate_apply"

func (b *business) run(ctx context.Context, fn func(context.Context) error) (err error) {
	if !b.ownTx {
		if err := b.tx.exec(ctx, "SAVEPOINT "+savepoint); err != nil {
			return fmt.Errorf("sqlgate: savepoint: %w", err)
		}
		defer func() { err = b.endSavepoint(ctx, err) }()
	}
	if err := b.setMark(ctx); err != nil {
		return err
	}
	if err := fn(withAccepting(ctx, b.v, b.d)); err != nil {
		return fmt.Errorf("%w: %w", ErrBusiness, err)
	}
	switch {
	case b.d.Outcome != gate.Accepted:
		return b.g.record(ctx, b.tx, b.d, b.v, b.prior)
	case b.stored:
		return nil
	}
	return b.finishAccept(ctx)
}

// setMark marks the transaction for an accept and unmarks it for a
// shadow-mode rejection.
func (b *business) setMark(ctx context.Context) error {
	g := b.g
	accept := b.d.Outcome == gate.Accepted
	switch {
	case accept && (b.marked || !b.guarded):
	case accept:
		if err := b.tx.exec(ctx, g.stmt.mark); err != nil {
			return fmt.Errorf("sqlgate: mark apply: %w", err)
		}
	case b.marked:
		if err := b.tx.exec(ctx, g.stmt.unmark); err != nil {
			return fmt.Errorf("sqlgate: unmark apply: %w", err)
		}
	}
	return nil
}

// finishAccept stores the receipt and the new fence state, clearing the
// mark and counting the guarded writes when the transaction may be
// marked: one statement on every dialect, the last before the commit when
// the gate owns the transaction.
func (b *business) finishAccept(ctx context.Context) error {
	g, r := b.g, &b.d.Receipt
	q := g.stmt.finishAccept
	if !b.guarded {
		q = g.stmt.finishAcceptUnguarded
	}
	exec := b.tx.exec
	if b.ownTx {
		exec = b.tx.execLast
	}
	err := exec(ctx, q, r.Resource, int64(r.FenceToken), int64(r.SegmentSeq), r.OperationID,
		r.OperationRoot[:], r.PayloadDigest[:], r.GrantDigest[:], r.AcceptedAt.UnixMilli(), string(r.Mode), timeMs(b.d.State.GrantIssuedAt))
	if err != nil {
		return fmt.Errorf("sqlgate: record ACCEPTED: %w", err)
	}
	return nil
}

// endSavepoint undoes everything since the savepoint if err is set, and
// releases it.
func (b *business) endSavepoint(ctx context.Context, err error) error {
	if err != nil {
		if rerr := b.tx.exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); rerr != nil {
			err = errors.Join(err, fmt.Errorf("sqlgate: rollback to savepoint: %w (roll the transaction back)", rerr))
		}
	}
	if rerr := b.tx.exec(ctx, "RELEASE SAVEPOINT "+savepoint); rerr != nil && err == nil {
		err = fmt.Errorf("sqlgate: release savepoint: %w", rerr)
	}
	return err
}
