// This file measures the fenced write against its two peers op by op:
// the plain write, and the fence a user would write by hand (the lock
// service's revision as the token; in the business transaction
// `UPDATE fence SET token = $t WHERE resource = $r AND token <= $t`, then
// the write). Each iteration does one of each on the same database, in
// an order that rotates, so all three see the same load on a shared
// machine. It reports the medians and the ratios; nothing is asserted.
// With FENCEGATE_BENCH_REPORTER=1 a gate reporter runs beside it
// (bench_reporter_test.go).
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/benchpair"
)

// fenceDDL is the hand-rolled fence's table: one row per resource, the
// highest token seen.
const fenceDDL = `CREATE TABLE fence (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)`

// errFenced is the hand-rolled fence's rejection: a newer token was seen.
var errFenced = errors.New("hand-rolled fence: a newer token was seen")

// handFenceSQL is the hand-rolled fence's statement.
const handFenceSQL = `UPDATE fence SET token = $1 WHERE resource = $2 AND token <= $1`

// handFencedWrite is the peer: in one transaction, raise the resource's
// fence to the mutation's token (refused if a newer one was seen), then
// the business write.
func handFencedWrite(ctx context.Context, db *sql.DB, m *gate.Mutation) error {
	return fencedWrite(ctx, db, m, handFenceSQL, nil)
}

// fencedWrite is a hand-rolled fence: in one transaction, fence (a
// statement taking the token and the resource, which must update one row,
// else a newer token was seen), the business write, then after, if any.
func fencedWrite(ctx context.Context, db *sql.DB, m *gate.Mutation, fence string, after func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, fence, int64(m.FenceToken), m.Resource)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(errFenced, err)
	}
	if err := write(m, "x")(ctx, tx); err != nil {
		return err
	}
	if after != nil {
		if err := after(tx); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// seedFence creates the fence table with a row for each resource of ms.
func (e *env) seedFence(ms []*gate.Mutation) {
	e.exec(fenceDDL)
	e.exec(`INSERT INTO fence (resource, token) VALUES ($1, 0)`, ms[0].Resource)
}

func BenchmarkWritePaired(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be, nil)
			log := benchReporter(b, e, be)
			plain, hand, fenced := segments(e, b.N), segments(e, b.N), segments(e, b.N)
			e.seedFence(hand)
			benchpair.Run(b,
				benchpair.Lane{Name: "plain", Write: func(i int) error { return plainWrite(e.ctx, e.db, plain[i]) }},
				benchpair.Lane{Name: "fence", Write: func(i int) error { return handFencedWrite(e.ctx, e.db, hand[i]) }},
				benchpair.Lane{Name: "fenced", Write: func(i int) error {
					_, err := e.g.Run(e.ctx, e.db, owner, fenced[i], write(fenced[i], "x"))
					if log != nil {
						log.Note(owner, fenced[i], err)
					}
					return err
				}})
		})
	}
}
