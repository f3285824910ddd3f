package sqlgate

import (
	"context"
	"database/sql"
)

// txn is a transaction as the apply path sees it: database/sql's *sql.Tx
// (sqlTxn, through the gate's prepared statements) or a pgx connection in
// a transaction the gate began (pgxTxn, pgx.go). The decision code is the
// same over both.
type txn interface {
	exec(ctx context.Context, q string, args ...any) error
	queryRow(ctx context.Context, q string, args ...any) rowScanner
	query(ctx context.Context, q string, args ...any) (rowsScanner, error)
	// execLast runs the statement after which only the commit comes (an
	// accept's receipt in a transaction the gate owns): a pipelining
	// transaction holds it and sends it with the COMMIT.
	execLast(ctx context.Context, q string, args ...any) error
	// execCount is exec that returns the statement's row count.
	execCount(ctx context.Context, q string, args ...any) (int64, error)
}

// rowScanner is one row of a query.
type rowScanner interface{ Scan(dest ...any) error }

// rowsScanner is a query's rows.
type rowsScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// sqlTxn is a *sql.Tx of the database the gate was migrated on.
type sqlTxn struct {
	g  *Gate
	tx *sql.Tx
}

func (t sqlTxn) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.g.exec(ctx, t.tx, q, args...)
	return err
}

func (t sqlTxn) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	return t.g.queryRow(ctx, t.tx, q, args...)
}

func (t sqlTxn) query(ctx context.Context, q string, args ...any) (rowsScanner, error) {
	return sqlRows(t.tx.QueryContext(ctx, q, args...))
}

func (t sqlTxn) execCount(ctx context.Context, q string, args ...any) (int64, error) {
	return rowCount(t.g.exec(ctx, t.tx, q, args...))
}

func (t sqlTxn) execLast(ctx context.Context, q string, args ...any) error {
	return t.exec(ctx, q, args...)
}

// dbtxTxn reads through any DBTX (a *sql.DB or a caller's *sql.Tx): the
// read-only helpers' view.
type dbtxTxn struct{ q DBTX }

func (t dbtxTxn) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.q.ExecContext(ctx, q, args...)
	return err
}

func (t dbtxTxn) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	return t.q.QueryRowContext(ctx, q, args...)
}

func (t dbtxTxn) query(ctx context.Context, q string, args ...any) (rowsScanner, error) {
	return sqlRows(t.q.QueryContext(ctx, q, args...))
}

func (t dbtxTxn) execCount(ctx context.Context, q string, args ...any) (int64, error) {
	return rowCount(t.q.ExecContext(ctx, q, args...))
}

func (t dbtxTxn) execLast(ctx context.Context, q string, args ...any) error {
	return t.exec(ctx, q, args...)
}

// sqlRowsScanner adapts *sql.Rows (whose Close returns an error, which
// Err reports anyway).
type sqlRowsScanner struct{ *sql.Rows }

func (r sqlRowsScanner) Close() { r.Rows.Close() }

func sqlRows(rows *sql.Rows, err error) (rowsScanner, error) {
	if err != nil {
		return nil, err
	}
	return sqlRowsScanner{rows}, nil
}

// rowCount is a result's row count.
func rowCount(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
