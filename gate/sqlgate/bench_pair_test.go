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
	"slices"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
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

// lane is one of the writes a paired benchmark rotates, and its times.
type lane struct {
	name  string // its metrics' prefix
	write func(i int) error
	times []time.Duration
}

// runLanes does write i of every lane, in an order that rotates with i,
// for b.N iterations, so that all of them see the same load on a shared
// machine. It then reports each lane's median (name-µs) and, for each
// pair, the later lane's median over the earlier's (later/earlier: with
// lanes plain, fence, fenced, the gate against the hand-rolled fence is
// fenced/fence, the goal).
func runLanes(b *testing.B, lanes ...*lane) {
	for _, l := range lanes {
		l.times = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range lanes {
			l := lanes[(i+k)%len(lanes)]
			t0 := time.Now()
			if err := l.write(i); err != nil {
				b.Fatal(err)
			}
			l.times = append(l.times, time.Since(t0))
		}
	}
	meds := make([]time.Duration, len(lanes))
	for k, l := range lanes {
		meds[k] = median(l.times)
		b.ReportMetric(float64(meds[k].Microseconds()), l.name+"-µs")
		for j := range k {
			b.ReportMetric(float64(meds[k])/float64(meds[j]), l.name+"/"+lanes[j].name)
		}
	}
}

func BenchmarkWritePaired(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be, nil)
			log := benchReporter(b, e, be)
			plain, hand, fenced := segments(e, b.N), segments(e, b.N), segments(e, b.N)
			e.seedFence(hand)
			runLanes(b,
				&lane{name: "plain", write: func(i int) error { return plainWrite(e.ctx, e.db, plain[i]) }},
				&lane{name: "fence", write: func(i int) error { return handFencedWrite(e.ctx, e.db, hand[i]) }},
				&lane{name: "fenced", write: func(i int) error {
					_, err := e.g.Run(e.ctx, e.db, owner, fenced[i], write(fenced[i], "x"))
					if log != nil {
						log.Note(owner, fenced[i], err)
					}
					return err
				}})
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
