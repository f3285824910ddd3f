// This file measures the floor under the SQLite rows of WritePaired: what
// the hand-rolled fence costs once it, too, keeps a record of each write.
//
// The hand-rolled fence's UPDATE sets the token its row already holds
// whenever the lock has not changed hands, as in WritePaired and in any
// run of writes under one lock. SQLite compares the new record with the
// stored one and leaves the page clean when they are equal, so the peer
// appends the plain write's one WAL page (BenchmarkWALFrames/hand-fence).
// A gate that keeps anything per write (a segment number, a receipt, the
// last receipts held in the fence row) changes a row on every write, so
// at least one more page. The floor here is the least such record: the
// same fence UPDATE also counting its writes (one column of the same row,
// changed in place). It is the peer's own statement; only the page it
// dirties differs. Beside it, the naive receipt design the issue measured:
// the peer plus one receipt row, shaped like the gate's, in a table keyed
// like the gate's. Nothing is asserted.
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
)

// countedFenceSQL is the hand-rolled fence that also counts its writes.
const countedFenceSQL = `UPDATE fence_counted SET token = $1, writes = writes + 1 WHERE resource = $2 AND token <= $1`

// countedFencedWrite is handFencedWrite with countedFenceSQL.
func countedFencedWrite(ctx context.Context, db *sql.DB, m *gate.Mutation) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, countedFenceSQL, int64(m.FenceToken), m.Resource)
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

// receiptDDL is a receipts table shaped and keyed like the gate's
// (schema 5 on SQLite), without its triggers.
const receiptDDL = `CREATE TABLE floor_receipts (resource TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL,
  operation_id TEXT NOT NULL, operation_root BLOB NOT NULL, payload_digest BLOB NOT NULL, grant_digest BLOB NOT NULL,
  accepted_at_ms BIGINT NOT NULL, mode TEXT NOT NULL, PRIMARY KEY (resource, fence, seq)) WITHOUT ROWID`

// receiptedWrite is handFencedWrite plus one receipt row for m.
func receiptedWrite(ctx context.Context, db *sql.DB, m *gate.Mutation) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, handFenceSQL, int64(m.FenceToken), m.Resource)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(errFenced, err)
	}
	if err := write(m, "x")(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO floor_receipts VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'enforce')`,
		m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), m.OperationID, m.PayloadDigest[:], m.PayloadDigest[:],
		m.PayloadDigest[:], time.Now().UnixMilli()); err != nil {
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
// one receipt row, and the fenced write, each against the peer.
func BenchmarkWriteFloor(b *testing.B) {
	for _, be := range benchBackends()[:2] { // SQLite FULL and NORMAL
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be, nil)
			hand, counted, receipted, fenced := segments(e, b.N), segments(e, b.N), segments(e, b.N), segments(e, b.N)
			e.seedFence(hand)
			e.exec(`INSERT INTO fence (resource, token) VALUES ($1, 0)`, receipted[0].Resource)
			e.seedCountedFence(counted)
			e.exec(receiptDDL)
			times := [4][]time.Duration{}
			writes := [4]func(i int) error{
				func(i int) error { return handFencedWrite(e.ctx, e.db, hand[i]) },
				func(i int) error { return countedFencedWrite(e.ctx, e.db, counted[i]) },
				func(i int) error { return receiptedWrite(e.ctx, e.db, receipted[i]) },
				func(i int) error {
					_, err := e.g.Run(e.ctx, e.db, owner, fenced[i], write(fenced[i], "x"))
					return err
				},
			}
			b.ResetTimer()
			for i := range b.N {
				for k := range writes {
					w := (i + k) % len(writes)
					t0 := time.Now()
					if err := writes[w](i); err != nil {
						b.Fatal(err)
					}
					times[w] = append(times[w], time.Since(t0))
				}
			}
			mh := median(times[0])
			b.ReportMetric(float64(mh.Microseconds()), "fence-µs")
			for k, name := range []string{"", "counted", "receipted", "fenced"} {
				if k > 0 {
					m := median(times[k])
					b.ReportMetric(float64(m.Microseconds()), name+"-µs")
					b.ReportMetric(float64(m)/float64(mh), name+"/fence")
				}
			}
		})
	}
}
