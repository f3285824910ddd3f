// This file measures the floors under WritePaired's rows: what the
// hand-rolled fence costs once it, too, keeps a record of each write.
//
// SQLite: the hand-rolled fence's UPDATE sets the token its row already
// holds whenever the lock has not changed hands, as in WritePaired and in
// any run of writes under one lock. SQLite compares the new record with
// the stored one and leaves the page clean when they are equal, so the
// peer appends the plain write's one WAL page
// (BenchmarkWALFrames/hand-fence). A gate that keeps anything per write (a
// segment number, a receipt, the last receipts held in the fence row)
// changes a row on every write, so at least one more page. The floor here
// is the least such record: the same fence UPDATE also counting its
// writes (one column of the same row, changed in place). It is the peer's
// own statement; only the page it dirties differs. PostgreSQL writes a
// new row version even when nothing changed, so there the peer already
// pays for that row.
//
// Beside it, on both, the naive receipt design the issue measured: the
// peer plus one receipt row, shaped like the gate's, in a table keyed
// like the gate's (on PostgreSQL in the fence UPDATE's statement, so it
// adds no round trip). Nothing is asserted.
//
// The fenced lane is a warm gate: it decides on the state it cached and
// stores with one compare (fast.go). The cold lane is a gate on the same
// database that keeps no state (Config.CachedStatesMax < 0), writing
// another resource: every write reads the state first, as a gate's first
// write of a resource does (coldGate; on a revision before the cache,
// scripts/bench-all.sh stubs it with the gate itself).
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/benchpair"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// countedFenceSQL is the hand-rolled fence that also counts its writes.
const countedFenceSQL = `UPDATE fence_counted SET token = $1, writes = writes + 1 WHERE resource = $2 AND token <= $1`

// countedFencedWrite is handFencedWrite with countedFenceSQL.
func countedFencedWrite(ctx context.Context, db *sql.DB, m *gate.Mutation) error {
	return fencedWrite(ctx, db, m, countedFenceSQL, nil)
}

// receiptDDL is a receipts table shaped and keyed like the gate's
// (schema 5), without its triggers; %[1]s is the digests' type and %[2]s
// what follows the table's definition.
const receiptDDL = `CREATE TABLE floor_receipts (resource TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL,
  operation_id TEXT NOT NULL, operation_root %[1]s NOT NULL, payload_digest %[1]s NOT NULL, grant_digest %[1]s NOT NULL,
  accepted_at_ms BIGINT NOT NULL, mode TEXT NOT NULL, PRIMARY KEY (resource, fence, seq))%[2]s`

// insertReceiptSQL stores one receipt into floor_receipts.
const insertReceiptSQL = `INSERT INTO floor_receipts VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'enforce')`

// receiptArgs are m's receipt's values for insertReceiptSQL (its payload
// digest stands in for all three 32-byte digests).
func receiptArgs(m *gate.Mutation) []any {
	return []any{m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), m.OperationID, m.PayloadDigest[:], m.PayloadDigest[:],
		m.PayloadDigest[:], time.Now().UnixMilli()}
}

// receiptedWrite is handFencedWrite plus one receipt row for m.
func receiptedWrite(ctx context.Context, db *sql.DB, m *gate.Mutation) error {
	return fencedWrite(ctx, db, m, handFenceSQL, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, insertReceiptSQL, receiptArgs(m)...)
		return err
	})
}

// pgxReceiptedFenceSQL is the hand-rolled fence's UPDATE and the receipt's
// INSERT as one statement, so that the receipt costs the server's work
// and no round trip of its own; its row count is 1 where the fence
// passed, as the UPDATE's is.
const pgxReceiptedFenceSQL = `WITH f AS (UPDATE fence SET token = $2 WHERE resource = $1 AND token <= $2 RETURNING resource)
INSERT INTO floor_receipts SELECT f.resource, $2, $3, $4, $5, $6, $7, $8, 'enforce' FROM f`

// pgxReceiptedWrite is pgxHandFencedWrite storing one receipt row for m
// with its fence UPDATE.
func pgxReceiptedWrite(ctx context.Context, conn *pgx.Conn, m *gate.Mutation) error {
	return pgxFencedWrite(ctx, conn, m, pgxReceiptedFenceSQL, receiptArgs(m)...)
}

// sqlReceiptedWrite is receiptedWrite on PostgreSQL: the receipt in the
// fence UPDATE's statement (pgxReceiptedFenceSQL), as WriteFloorPgx's
// peer, through database/sql.
func sqlReceiptedWrite(ctx context.Context, db *sql.DB, m *gate.Mutation) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, pgxReceiptedFenceSQL, receiptArgs(m)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(errFenced, err)
	}
	if err := write(m, "x")(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// seedCountedFence creates the counted fence's table with a row for the
// resource of ms.
func (e *env) seedCountedFence(ms []*gate.Mutation) {
	e.exec(`CREATE TABLE fence_counted (resource TEXT PRIMARY KEY, token BIGINT NOT NULL, writes BIGINT NOT NULL)`)
	e.exec(`INSERT INTO fence_counted (resource, token, writes) VALUES ($1, 0, 0)`, ms[0].Resource)
}

// BenchmarkWriteFloor times, op by op in rotating order on one SQLite
// database, the hand-rolled fence (the peer), the same fence counting its
// writes (the floor of any gate that records each write), the peer with
// one receipt row, the fenced write, and the fenced write of a gate that
// caches no state, each against the peer.
func BenchmarkWriteFloor(b *testing.B) {
	for _, be := range benchBackends()[:2] { // SQLite FULL and NORMAL
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be, nil)
			hand, counted, receipted, fenced, cold := segments(e, b.N), segments(e, b.N), segments(e, b.N), segments(e, b.N), segments(e, b.N)
			coldG := coldGate(b, e, be.dialect)
			e.seedFence(hand)
			e.exec(`INSERT INTO fence (resource, token) VALUES ($1, 0)`, receipted[0].Resource)
			e.seedCountedFence(counted)
			e.exec(fmt.Sprintf(receiptDDL, "BLOB", " WITHOUT ROWID"))
			benchpair.Run(b,
				benchpair.Lane{Name: "fence", Write: func(i int) error { return handFencedWrite(e.ctx, e.db, hand[i]) }},
				benchpair.Lane{Name: "counted", Write: func(i int) error { return countedFencedWrite(e.ctx, e.db, counted[i]) }},
				benchpair.Lane{Name: "receipted", Write: func(i int) error { return receiptedWrite(e.ctx, e.db, receipted[i]) }},
				benchpair.Lane{Name: "fenced", Write: func(i int) error {
					_, err := e.g.Run(e.ctx, e.db, owner, fenced[i], write(fenced[i], "x"))
					return err
				}},
				benchpair.Lane{Name: "cold", Write: func(i int) error {
					_, err := coldG.Run(e.ctx, e.db, owner, cold[i], write(cold[i], "x"))
					return err
				}})
		})
	}
}

// BenchmarkWriteFloorPgx is WriteFloor on PostgreSQL through pgx's own
// interface, as WritePairedPgx: the hand-rolled fence, the peer with one
// receipt row, and RunPgx, on one connection, synchronous_commit on and
// off. (A counted fence would measure nothing here: the peer's UPDATE
// already writes a new row version every time.) It also reports each
// lane's round trips and statements a write (Name-trips/op,
// Name-stmts/op), counted by a pgx tracer on the connection.
func BenchmarkWriteFloorPgx(b *testing.B) {
	for _, on := range []string{"on", "off"} {
		b.Run("postgres-sync-"+on, func(b *testing.B) {
			cnt := &stmtCounter{}
			e, conn := openPgxEnv(b, pgtest.WithParam(pgtest.NewDatabase(b), "synchronous_commit", on), cnt)
			hand, receipted, fenced, cold := segments(e, b.N), segments(e, b.N), segments(e, b.N), segments(e, b.N)
			coldG := coldGate(b, e, sqlgate.Postgres)
			e.seedFence(hand)
			e.exec(`INSERT INTO fence (resource, token) VALUES ($1, 0)`, receipted[0].Resource)
			e.exec(fmt.Sprintf(receiptDDL, "BYTEA", ""))
			lanes := []benchpair.Lane{
				{Name: "fence", Write: func(i int) error { return pgxHandFencedWrite(e.ctx, conn, hand[i]) }},
				{Name: "receipted", Write: func(i int) error { return pgxReceiptedWrite(e.ctx, conn, receipted[i]) }},
				{Name: "fenced", Write: func(i int) error {
					_, err := e.g.RunPgx(e.ctx, conn, owner, fenced[i], pgxWrite(fenced[i]))
					return err
				}},
				{Name: "cold", Write: func(i int) error {
					_, err := coldG.RunPgx(e.ctx, conn, owner, cold[i], pgxWrite(cold[i]))
					return err
				}}}
			counts := make([][2]int64, len(lanes))
			for k := range lanes {
				write := lanes[k].Write
				lanes[k].Write = func(i int) error {
					t0, s0 := cnt.trips.Load(), cnt.stmts.Load()
					err := write(i)
					counts[k][0] += cnt.trips.Load() - t0
					counts[k][1] += cnt.stmts.Load() - s0
					return err
				}
			}
			benchpair.Run(b, lanes...)
			for k, l := range lanes {
				b.ReportMetric(float64(counts[k][0])/float64(b.N), l.Name+"-trips/op")
				b.ReportMetric(float64(counts[k][1])/float64(b.N), l.Name+"-stmts/op")
			}
		})
	}
}

// stmtCounter counts, on a pgx connection, round trips (each query, and
// each batch) and the statements they carry (BEGIN and COMMIT included).
type stmtCounter struct{ trips, stmts atomic.Int64 }

func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.trips.Add(1)
	c.stmts.Add(1)
	return ctx
}
func (*stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *stmtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.trips.Add(1)
	return ctx
}
func (c *stmtCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.stmts.Add(1)
}
func (*stmtCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// BenchmarkWriteFloorRun is WriteFloorPgx through database/sql: the
// hand-rolled fence, the peer with one receipt row (in the fence
// UPDATE's statement) and Run, on one pool, synchronous_commit on and
// off: Run's goal is set against the receipt peer on its own driver.
func BenchmarkWriteFloorRun(b *testing.B) {
	for _, be := range benchBackends()[2:] { // PostgreSQL, sync on and off
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be, nil)
			hand, receipted, fenced, cold := segments(e, b.N), segments(e, b.N), segments(e, b.N), segments(e, b.N)
			coldG := coldGate(b, e, be.dialect)
			e.seedFence(hand)
			e.exec(`INSERT INTO fence (resource, token) VALUES ($1, 0)`, receipted[0].Resource)
			e.exec(fmt.Sprintf(receiptDDL, "BYTEA", ""))
			benchpair.Run(b,
				benchpair.Lane{Name: "fence", Write: func(i int) error { return handFencedWrite(e.ctx, e.db, hand[i]) }},
				benchpair.Lane{Name: "receipted", Write: func(i int) error { return sqlReceiptedWrite(e.ctx, e.db, receipted[i]) }},
				benchpair.Lane{Name: "fenced", Write: func(i int) error {
					_, err := e.g.Run(e.ctx, e.db, owner, fenced[i], write(fenced[i], "x"))
					return err
				}},
				benchpair.Lane{Name: "cold", Write: func(i int) error {
					_, err := coldG.Run(e.ctx, e.db, owner, cold[i], write(cold[i], "x"))
					return err
				}})
		})
	}
}
