// This file measures RunPgx against the plain write through pgx's own
// interface (BEGIN, INSERT, COMMIT on one connection), alternating op by
// op with the hand-rolled fence as WritePaired does; nothing is asserted.
package sqlgate_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/benchpair"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// BenchmarkWritePairedPgx is WritePaired for pgx's own interface: the
// plain write is BEGIN, INSERT, COMMIT on a pgx connection, the
// hand-rolled fence BEGIN, the fence UPDATE, INSERT, COMMIT, the fenced
// one RunPgx with the same INSERT, rotating on one connection.
func BenchmarkWritePairedPgx(b *testing.B) {
	for _, on := range []string{"on", "off"} {
		b.Run("postgres-sync-"+on, func(b *testing.B) {
			e, conn := openPgxEnv(b, pgtest.WithParam(pgtest.NewDatabase(b), "synchronous_commit", on), nil)
			plain, hand, fenced := segments(e, b.N), segments(e, b.N), segments(e, b.N)
			e.seedFence(hand)
			benchpair.Run(b,
				benchpair.Lane{Name: "plain", Write: func(i int) error { return pgxPlainWrite(e.ctx, conn, plain[i]) }},
				benchpair.Lane{Name: "fence", Write: func(i int) error { return pgxHandFencedWrite(e.ctx, conn, hand[i]) }},
				benchpair.Lane{Name: "fenced", Write: func(i int) error {
					_, err := e.g.RunPgx(e.ctx, conn, owner, fenced[i], pgxWrite(fenced[i]))
					return err
				}})
		})
	}
}

// openPgxEnv is a PostgreSQL gate on dsn, migrated through database/sql,
// and one pgx connection to the same database, traced by tracer if not
// nil. (It lives with the benchmarks, which scripts/bench-all.sh copies
// onto older trees, so that they need nothing newer from the tests.)
func openPgxEnv(t testing.TB, dsn string, tracer pgx.QueryTracer) (*env, *pgx.Conn) {
	e := newEnv(t, backend{"postgres", sqlgate.Postgres, func(t testing.TB) *sql.DB {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}}, nil)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = tracer
	conn, err := pgx.ConnectConfig(e.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return e, conn
}

// pgxHandFencedWrite is handFencedWrite through pgx's own interface, as a
// pgx user writes it: Begin, the fence UPDATE, the write, Commit.
func pgxHandFencedWrite(ctx context.Context, conn *pgx.Conn, m *gate.Mutation) error {
	return pgxFencedWrite(ctx, conn, m, handFenceSQL, int64(m.FenceToken), m.Resource)
}

// pgxFencedWrite is fencedWrite through pgx's own interface: Begin, fence
// with args (it must affect one row), the write, Commit.
func pgxFencedWrite(ctx context.Context, conn *pgx.Conn, m *gate.Mutation, fence string, args ...any) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	tag, err := tx.Exec(ctx, fence, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return errFenced
	}
	if err := pgxWrite(m)(ctx, tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
