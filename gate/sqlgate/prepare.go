package sqlgate

import (
	"context"
	"database/sql"
	"fmt"
)

// prepare prepares the statements of the apply path on db, so each
// connection parses them once (Migrate calls it). Transactions passed to
// Apply must then come from db.
func (g *Gate) prepare(ctx context.Context, db *sql.DB) error {
	s := &g.stmt
	prepared := map[string]*sql.Stmt{}
	for _, q := range []string{s.lockLookup, s.ensureState, s.receiptAt,
		s.mark, s.finishAccept, s.finishAcceptUnguarded, s.speculate, s.fastStore} {
		if q == "" || prepared[q] != nil {
			continue
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlgate: prepare: %w\n%s", err, q)
		}
		prepared[q] = st
	}
	g.prepared.Store(&prepared)
	return nil
}

// exec runs q in tx, through its prepared statement when there is one.
func (g *Gate) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if p := g.prepared.Load(); p != nil {
		if st := (*p)[q]; st != nil {
			return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		}
	}
	return tx.ExecContext(ctx, q, args...)
}

// queryRow is exec for a one-row query.
func (g *Gate) queryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if p := g.prepared.Load(); p != nil {
		if st := (*p)[q]; st != nil {
			return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
		}
	}
	return tx.QueryRowContext(ctx, q, args...)
}
