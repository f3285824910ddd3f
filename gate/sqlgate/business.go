package sqlgate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
)

// business runs one business function for a decision that proceeds: an
// accept, whose mark lets the coverage guard admit the protected rows of
// its own resource and count them (PostgreSQL: the receipt, stored
// first; SQLite: a mark row, until the receipt), or a shadow-mode
// rejection, which has no mark: its protected writes are refused
// (enforce-mode tables) or counted as ungated (shadow-mode tables).
type business struct {
	g     *Gate
	tx    txn
	d     gate.Decision
	v     *gate.Verified
	prior *gate.Receipt
	ownTx bool // Run owns tx: no savepoint needed, a failure rolls back all
	// guarded: some table is protected, so an accept must mark tx before
	// the business change. When none is, no guard exists to look, and the
	// accept is stored after the change (with the COMMIT, on pgx).
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
	accept := b.d.Outcome == gate.Accepted
	if accept && b.guarded && !b.stored {
		if err := b.mark(ctx); err != nil {
			return err
		}
	}
	if err := fn(withAccepting(ctx, b.v, b.d)); err != nil {
		if isUnguarded(err) {
			return fmt.Errorf("%w: %w: %w", ErrBusiness, ErrUnguarded, err)
		}
		return fmt.Errorf("%w: %w", ErrBusiness, err)
	}
	switch {
	case !accept:
		return b.g.record(ctx, b.tx, b.d, b.v, b.prior)
	case b.stored:
		return nil
	}
	return b.finishAccept(ctx)
}

// mark marks the transaction for the coverage guard as inside an accept
// of the resource: where the receipt is the mark (PostgreSQL), by storing
// the accept now; else by the dialect's mark statement, which
// finishAccept undoes.
func (b *business) mark(ctx context.Context) error {
	if b.g.d.storesMarkFirst {
		if err := b.store(ctx, b.tx.exec); err != nil {
			return err
		}
		b.stored = true
		return nil
	}
	r := &b.d.Receipt
	if err := b.tx.exec(ctx, b.g.stmt.mark, r.Resource, r.Mode == gate.ModeEnforce); err != nil {
		return fmt.Errorf("sqlgate: mark apply: %w", err)
	}
	return nil
}

// finishAccept stores the receipt and the new fence state (SQLite: also
// counts the guarded writes on the mark and deletes it): one statement on
// every dialect, the last before the commit when the gate owns the
// transaction.
func (b *business) finishAccept(ctx context.Context) error {
	exec := b.tx.exec
	if b.ownTx {
		exec = b.tx.execLast
	}
	return b.store(ctx, exec)
}

// store runs the dialect's statement that stores the accept through exec.
func (b *business) store(ctx context.Context, exec func(ctx context.Context, q string, args ...any) error) error {
	g, r := b.g, &b.d.Receipt
	q := g.stmt.finishAccept
	if !b.guarded {
		q = g.stmt.finishAcceptUnguarded
	}
	err := exec(ctx, q, r.Resource, int64(r.FenceToken), int64(r.SegmentSeq), r.OperationID,
		r.OperationRoot[:], r.PayloadDigest[:], r.GrantDigest[:], r.AcceptedAt.UnixMilli(), string(r.Mode), timeMs(b.d.State.GrantIssuedAt))
	if err != nil {
		return fmt.Errorf("sqlgate: record ACCEPTED: %w", err)
	}
	return nil
}

// isUnguarded reports whether err is the coverage guard's refusal
// (PostgreSQL: SQLSTATE FG020; SQLite: its message).
func isUnguarded(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == UnguardedState
	}
	return strings.Contains(err.Error(), "fencegate: FG020: ")
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
