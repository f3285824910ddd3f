package sqlgate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
)

// PgxQuerier is what a business function may do in RunPgx's transaction:
// run statements (and batches of them) on the connection. The gate owns
// the transaction: the function neither commits nor rolls back.
type PgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// PgxBusinessFunc makes the protected change through q, in the gate's
// transaction, only when the gate lets the mutation through; if it returns
// an error the transaction is rolled back.
type PgxBusinessFunc func(ctx context.Context, q PgxQuerier) error

// ErrNotPostgres: RunPgx needs a gate of the Postgres dialect.
var ErrNotPostgres = errors.New("sqlgate: RunPgx needs the Postgres dialect")

// RunPgx is Run over one pgx connection (not shared with any other
// goroutine meanwhile; from a pgxpool, the acquired connection's Conn()),
// for callers that use pgx's own interface instead of database/sql. The
// decision, the speculative accept and what is stored are Run's; only
// the round trips differ: BEGIN travels with the gate's first statement
// and, when the receipt is stored after the business change, the receipt
// travels with COMMIT. An accepted write with a status proof takes three
// round trips (BEGIN with the lock-and-store statement, the business
// statements, COMMIT), as many as a plain pgx transaction of one
// statement. Migrate the schema with database/sql first (pgx's stdlib
// driver on the same database).
func (g *Gate) RunPgx(ctx context.Context, conn *pgx.Conn, caller string, m *gate.Mutation, fn PgxBusinessFunc) (gate.Receipt, error) {
	if g.d.name != Postgres.name {
		return gate.Receipt{}, ErrNotPostgres
	}
	t := &pgxTxn{conn: conn}
	defer func() {
		// Should fn panic, the connection leaves in no transaction: the
		// caller may recover and use it again, and a later COMMIT on it
		// must not commit this one's speculative accept and partial writes.
		if p := recover(); p != nil {
			t.rollback(ctx)
			panic(p)
		}
	}()
	r, err := g.applyIn(ctx, t, caller, m, func(ctx context.Context) error { return fn(ctx, conn) }, true)
	if !keepTx(err) {
		t.rollback(ctx)
		return r, err
	}
	if held, cerr := t.commit(ctx); cerr != nil {
		if held {
			return gate.Receipt{}, fmt.Errorf("sqlgate: record ACCEPTED: %w", cerr)
		}
		return gate.Receipt{}, fmt.Errorf("sqlgate: commit (outcome unknown: query receipts by operation ID): %w", cerr)
	}
	return r, err
}

// pgxTxn is a transaction on a pgx connection that the gate begins
// lazily: BEGIN is queued in front of the first statement, and the
// statement execLast holds goes in front of COMMIT, each pair in one
// round trip.
type pgxTxn struct {
	conn  *pgx.Conn
	begun bool       // BEGIN was sent
	last  *pgx.Batch // held for the COMMIT
}

// send runs q as a batch, behind BEGIN if the transaction has not begun
// and followed by more; the caller reads the results from br and closes br.
func (t *pgxTxn) send(ctx context.Context, q string, args []any, more ...*pgx.QueuedQuery) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	if !t.begun {
		b.Queue("BEGIN")
	}
	b.Queue(q, args...)
	b.QueuedQueries = append(b.QueuedQueries, more...)
	br := t.conn.SendBatch(ctx, b)
	if !t.begun {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, fmt.Errorf("sqlgate: begin: %w", err)
		}
		t.begun = true
	}
	return br, nil
}

func (t *pgxTxn) exec(ctx context.Context, q string, args ...any) error {
	_, err := t.execCount(ctx, q, args...)
	return err
}

func (t *pgxTxn) execCount(ctx context.Context, q string, args ...any) (int64, error) {
	if t.begun {
		tag, err := t.conn.Exec(ctx, q, args...)
		return tag.RowsAffected(), err
	}
	br, err := t.send(ctx, q, args)
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	return tag.RowsAffected(), errors.Join(err, br.Close())
}

func (t *pgxTxn) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	if t.begun {
		return t.conn.QueryRow(ctx, q, args...)
	}
	br, err := t.send(ctx, q, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// then implements pipeliner.
func (t *pgxTxn) then(q string, args []any, affected *int64) txn {
	return pgxThen{pgxTxn: t, q: &pgx.QueuedQuery{SQL: q, Arguments: args}, affected: affected}
}

// pgxThen is a pgxTxn whose queryRow sends one more statement behind its
// own.
type pgxThen struct {
	*pgxTxn
	q        *pgx.QueuedQuery
	affected *int64
}

func (t pgxThen) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	br, err := t.send(ctx, q, args, t.q)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br, then: t.affected}
}

func (t *pgxTxn) query(ctx context.Context, q string, args ...any) (rowsScanner, error) {
	if t.begun {
		return t.conn.Query(ctx, q, args...)
	}
	br, err := t.send(ctx, q, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return batchRows{Rows: rows, br: br}, nil
}

func (t *pgxTxn) execLast(ctx context.Context, q string, args ...any) error {
	if !t.begun || t.last != nil {
		return t.exec(ctx, q, args...)
	}
	t.last = &pgx.Batch{}
	t.last.Queue(q, args...)
	return nil
}

// commit sends the held statement, if any, and COMMIT in one round trip. held
// reports that the held statement itself failed: nothing was committed.
func (t *pgxTxn) commit(ctx context.Context) (held bool, err error) {
	if !t.begun {
		return false, nil
	}
	b := t.last
	t.last = nil
	if b == nil {
		// Nothing held: COMMIT alone, in the simple protocol as pgx's own
		// Tx.Commit sends it (a batch of one would take the extended
		// protocol's pipeline, with its Parse/Bind/Sync, on both sides).
		return false, committed(t.conn.Exec(ctx, "COMMIT"))
	}
	n := b.Len()
	b.Queue("COMMIT")
	br := t.conn.SendBatch(ctx, b)
	defer br.Close()
	if n == 1 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			t.rollback(ctx)
			return true, err
		}
	}
	return false, committed(br.Exec())
}

// errRolledBack: COMMIT answered ROLLBACK (the transaction had failed).
var errRolledBack = errors.New("the server rolled the transaction back")

// committed is COMMIT's outcome from its command tag and error.
func committed(tag pgconn.CommandTag, err error) error {
	if err == nil && tag.String() == "ROLLBACK" {
		return errRolledBack
	}
	return err
}

// rollback ends the transaction, if it began, best effort.
func (t *pgxTxn) rollback(ctx context.Context) {
	t.last = nil
	if t.begun {
		t.begun = false
		_, _ = t.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
}

// batchRow scans the row of a batch's query and closes the batch; with
// then, it first reads the row count of the statement that follows.
type batchRow struct {
	row  pgx.Row
	br   pgx.BatchResults
	then *int64
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if r.then != nil {
		tag, terr := r.br.Exec()
		*r.then = tag.RowsAffected()
		if err == nil || errors.Is(err, pgx.ErrNoRows) && terr != nil {
			err = errors.Join(err, terr)
		}
	}
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows are the rows of a batch's one query; closing them closes the
// batch.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
