package sqlgate

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Run on PostgreSQL through pgx's database/sql driver (pgx/v5/stdlib, the
// "pgx" driver) pins one connection for its transaction and sends the
// speculative accept's two statements, the lock-and-read and the store,
// as one pgx batch on that connection, as RunPgx does, instead of the
// one-statement CTE (Dialect.speculate) that database/sql can send: the
// pair is the cheaper of the two for the server (docs/performance.md,
// "PostgreSQL"). The business function still gets the *sql.Tx, on the
// same connection and in the same transaction; round trips are
// unchanged. Any other driver takes the CTE.

// pgxDriver reports whether db is on pgx's database/sql driver, whose
// every connection is a *stdlib.Conn. A driver wrapping it (a tracing
// wrapper, say) is not recognised, and Run takes the CTE there.
func pgxDriver(db *sql.DB) bool {
	_, ok := db.Driver().(*stdlib.Driver)
	return ok
}

// sqlPgxTxn is a *sql.Tx on a pinned connection of pgx's driver: a
// pipeliner whose pipelined query runs on the pgx connection under the
// transaction.
type sqlPgxTxn struct {
	sqlTxn
	conn *sql.Conn // the connection tx runs on
}

// then implements pipeliner.
func (t sqlPgxTxn) then(q string, args []any, affected *int64) txn {
	return sqlPgxThen{sqlPgxTxn: t, then: &pgx.QueuedQuery{SQL: q, Arguments: args}, affected: affected}
}

// sqlPgxThen is a sqlPgxTxn whose queryRow sends one more statement
// behind its own, in one batch.
type sqlPgxThen struct {
	sqlPgxTxn
	then     *pgx.QueuedQuery
	affected *int64
}

func (t sqlPgxThen) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	return rawBatchRow{ctx: ctx, conn: t.conn, first: &pgx.QueuedQuery{SQL: q, Arguments: args}, then: t.then, affected: t.affected}
}

// rawBatchRow is a pipelined query that runs when scanned: database/sql
// lends the driver connection only for the length of a call (Conn.Raw),
// so the batch is sent, read and closed inside it.
type rawBatchRow struct {
	ctx         context.Context
	conn        *sql.Conn
	first, then *pgx.QueuedQuery
	affected    *int64
}

// errNotPgx: the pinned connection is not pgx's (a bug: inOwnTx checked
// the driver).
var errNotPgx = errors.New("sqlgate: internal error: the pinned connection is not pgx's")

func (r rawBatchRow) Scan(dest ...any) error {
	return r.conn.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errNotPgx
		}
		b := &pgx.Batch{QueuedQueries: []*pgx.QueuedQuery{r.first, r.then}}
		br := pc.Conn().SendBatch(r.ctx, b)
		return batchRow{row: br.QueryRow(), br: br, then: r.affected}.Scan(dest...)
	})
}
