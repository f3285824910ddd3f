package sqlgate_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate/sqlgate"
)

// TestRunBusinessPanicEndsTheTransaction: a business function that panics
// leaves Run (and RunJob) by the panic, with its transaction rolled back
// and its connection back in the pool, on both backends (on PostgreSQL,
// Run pins a connection, whose Close waits for an open transaction:
// without the rollback the panic never got out). Negative control: drop
// the deferred rollback and SQLite keeps a connection in use, and Run on
// PostgreSQL hangs until the deadline.
func TestRunBusinessPanicEndsTheTransaction(t *testing.T) {
	for _, b := range []backend{sqliteBackend, postgresBackend} {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b, nil)
			m := e.iss.Mutation(wr("panic/1", 5, "op-a"), 1, "p")
			panics := func(context.Context, *sql.Tx) error { panic("business panic") }
			afterPanic(t, e, "Run", func() { e.g.Run(e.ctx, e.db, owner, m, panics) })
			if _, err := e.apply(owner, m, "p"); err != nil {
				t.Fatalf("the same write after the panic: %v", err)
			}
			if n := e.count(`SELECT count(*) FROM ledger WHERE resource = 'panic/1'`); n != 1 {
				t.Fatalf("%d ledger rows, want the second write's alone", n)
			}
			j := e.upstreamWithJob(e.iss.Mutation(wr("panic/2", 5, "op-b"), 1, "p"), 1, "j")
			afterPanic(t, e, "RunJob", func() { e.g.RunJob(e.ctx, e.db, jobHop, j, nil, panics) })
			if _, err := e.runJob(j, "j"); err != nil {
				t.Fatalf("the same job after the panic: %v", err)
			}
		})
	}
}

// afterPanic runs call, which must panic with the business function's
// panic within 10 s, and fails unless every connection is back in the
// pool then.
func afterPanic(t *testing.T, e *env, name string, call func()) {
	t.Helper()
	out := make(chan any, 1)
	go func() {
		defer func() { out <- recover() }()
		call()
	}()
	select {
	case p := <-out:
		if p != "business panic" {
			t.Fatalf("%s: recovered %v, want the business function's panic", name, p)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10 s of its business function's panic", name)
	}
	if n := e.db.Stats().InUse; n != 0 {
		t.Fatalf("%s: %d connections in use after the panic", name, n)
	}
}

// TestRunPgxBusinessPanicLeavesNoTransaction: after a business function
// panics inside RunPgx (its writes made, the speculative accept stored),
// the connection is in no transaction, so a caller that recovers and
// writes again commits nothing of the panicked write. Negative control:
// without RunPgx's rollback on panic the connection stays in the
// panicked transaction, and the same write sent again runs inside it: it
// finds the panicked write's speculative accept (REPLAYED), and its
// COMMIT commits that accept with the half-made business change.
func TestRunPgxBusinessPanicLeavesNoTransaction(t *testing.T) {
	e := newPgxEnv(t)
	ms := segments(e.env, 2)
	func() {
		defer func() {
			if p := recover(); p != "business panic" {
				t.Fatalf("recovered %v, want the business function's panic", p)
			}
		}()
		e.g.RunPgx(e.ctx, e.conn, owner, ms[0], func(ctx context.Context, q sqlgate.PgxQuerier) error {
			if err := pgxWrite(ms[0])(ctx, q); err != nil {
				return err
			}
			panic("business panic")
		})
	}()
	if s := e.conn.PgConn().TxStatus(); s != 'I' {
		t.Fatalf("connection transaction status %q after the panic, want idle", s)
	}
	if _, err := e.g.RunPgx(e.ctx, e.conn, owner, ms[0], pgxWrite(ms[0])); err != nil {
		t.Fatalf("the same write again: %v", err)
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE resource = $1`, ms[0].Resource); n != 1 {
		t.Fatalf("%d ledger rows, want the second write's alone", n)
	}
}
