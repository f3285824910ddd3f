// This file measures the fenced write into a protected table (the
// coverage guard in enforce mode on the ledger) against the plain write
// and the hand-rolled fence into an unprotected twin of the same table,
// op by op as WritePaired does: what the guard adds to a write. Nothing
// is asserted.
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/benchpair"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// twinDDL is the unprotected twin of the ledger the peers write.
const twinDDL = `CREATE TABLE ledger_twin (id %s, resource TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL, payload TEXT NOT NULL)`

// twinInsertSQL is the peers' business write.
const twinInsertSQL = `INSERT INTO ledger_twin (resource, fence, seq, payload) VALUES ($1, $2, $3, 'x')`

// protectLedger creates the twin and protects the ledger in enforce mode
// (its rows name their resource in the column resource).
func (e *env) protectLedger(b testing.TB, postgres bool) {
	serial := "INTEGER PRIMARY KEY"
	if postgres {
		serial = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	e.exec(fmt.Sprintf(twinDDL, serial))
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeEnforce, "bench"); err != nil {
		b.Fatal(err)
	}
}

// twinWrite is the plain write (fence "") or the hand-rolled fenced one
// into the twin, through database/sql.
func twinWrite(ctx context.Context, db *sql.DB, m *gate.Mutation, fence string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if fence != "" {
		res, err := tx.ExecContext(ctx, fence, int64(m.FenceToken), m.Resource)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(errFenced, err)
		}
	}
	if _, err := tx.ExecContext(ctx, twinInsertSQL, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq)); err != nil {
		return err
	}
	return tx.Commit()
}

// BenchmarkWritePairedGuarded is WritePaired with the gate's table
// protected: plain and fence write the unprotected twin, fenced writes
// the protected ledger through Run.
func BenchmarkWritePairedGuarded(b *testing.B) {
	for _, be := range benchBackends() {
		if be.name == "sqlite-FULL" || be.name == "postgres-sync-on" {
			continue // the durability setting moves all three lanes alike
		}
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be, nil)
			e.protectLedger(b, be.name != "sqlite-NORMAL")
			plain, hand, fenced := segments(e, b.N), segments(e, b.N), segments(e, b.N)
			e.seedFence(hand)
			benchpair.Run(b,
				benchpair.Lane{Name: "plain", Write: func(i int) error { return twinWrite(e.ctx, e.db, plain[i], "") }},
				benchpair.Lane{Name: "fence", Write: func(i int) error { return twinWrite(e.ctx, e.db, hand[i], handFenceSQL) }},
				benchpair.Lane{Name: "fenced", Write: func(i int) error {
					_, err := e.g.Run(e.ctx, e.db, owner, fenced[i], write(fenced[i], "x"))
					return err
				}})
		})
	}
}

// pgxTwinWrite is twinWrite through pgx's own interface.
func pgxTwinWrite(ctx context.Context, conn *pgx.Conn, m *gate.Mutation, fence string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if fence != "" {
		tag, err := tx.Exec(ctx, fence, int64(m.FenceToken), m.Resource)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return errFenced
		}
	}
	if _, err := tx.Exec(ctx, twinInsertSQL, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// BenchmarkWritePairedGuardedPgx is WritePairedGuarded through pgx's own
// interface (RunPgx), synchronous_commit off.
func BenchmarkWritePairedGuardedPgx(b *testing.B) {
	e, conn := openPgxEnv(b, pgtest.WithParam(pgtest.NewDatabase(b), "synchronous_commit", "off"), nil)
	e.protectLedger(b, true)
	plain, hand, fenced := segments(e, b.N), segments(e, b.N), segments(e, b.N)
	e.seedFence(hand)
	benchpair.Run(b,
		benchpair.Lane{Name: "plain", Write: func(i int) error { return pgxTwinWrite(e.ctx, conn, plain[i], "") }},
		benchpair.Lane{Name: "fence", Write: func(i int) error { return pgxTwinWrite(e.ctx, conn, hand[i], handFenceSQL) }},
		benchpair.Lane{Name: "fenced", Write: func(i int) error {
			_, err := e.g.RunPgx(e.ctx, conn, owner, fenced[i], pgxWrite(fenced[i]))
			return err
		}})
}
