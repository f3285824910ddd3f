// This file measures what the hand-off adds to a fenced write: each
// iteration does one fenced write alone and one fenced write that also
// enqueues a job (job number + River InsertTx) on the same database, so
// both see the same load; and, separately, a job applied through its
// target's gate against the fenced write it follows. Medians and ratios
// are reported; nothing is asserted.
package riverhop_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/downstream/riverhop"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

type benchEnv struct {
	ctx    context.Context
	db     *sql.DB
	insert string // the business insert in the dialect's placeholders
	g      *sqlgate.Gate
	iss    *gatetest.Issuer
	out    *riverhop.Outbox
}

func newBenchEnv(b *testing.B, be backend) *benchEnv {
	e := &benchEnv{ctx: context.Background(), iss: gatetest.NewIssuer("bench"), insert: `INSERT INTO ledger (k, v) VALUES ($1, $2)`}
	if be.dialect == sqlgate.SQLite {
		e.insert = `INSERT INTO ledger (k, v) VALUES (?, ?)`
	}
	e.db = be.open(b, be.dsn(b))
	var err error
	if e.g, err = sqlgate.New(sqlgate.Config{Dialect: be.dialect, Policy: gate.Policy{Verifier: e.iss.Verifier}, Clock: fakeclock.New(e.iss.Now)}); err != nil {
		b.Fatal(err)
	}
	if err := e.g.Migrate(e.ctx, e.db); err != nil {
		b.Fatal(err)
	}
	if _, err := e.db.Exec(`CREATE TABLE ledger (k TEXT NOT NULL, v TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	drv := be.driver(e.db)
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(e.ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	seq, _ := downstream.NewSequencer(be.dialect, "")
	if err := seq.Migrate(e.ctx, e.db); err != nil {
		b.Fatal(err)
	}
	ins, err := river.NewClient(drv, &river.Config{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	e.out = &riverhop.Outbox{Client: ins, Seq: seq}
	return e
}

// segments are n consecutive segments of one operation on resource.
func (e *benchEnv) segments(resource string, n int) []*gate.Mutation {
	w := gatetest.Writer{Resource: resource, Owner: "w", Lease: "l-1", OperationID: "op", Fence: 1}
	ms := make([]*gate.Mutation, n)
	for i := range ms {
		ms[i] = e.iss.Mutation(w, uint64(i+1), fmt.Sprint(i))
	}
	return ms
}

func (e *benchEnv) write(m *gate.Mutation, withJob bool) (*gate.Job, error) {
	var j *gate.Job
	_, err := e.g.Run(e.ctx, e.db, "w", m, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, e.insert, m.Resource, "v"); err != nil {
			return err
		}
		if withJob {
			var err error
			j, _, err = e.out.InsertTx(ctx, tx, hop, []byte("k v"), nil)
			return err
		}
		return nil
	})
	return j, err
}

func BenchmarkHandoffPaired(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			e := newBenchEnv(b, be)
			alone, withJob := e.segments("bench/alone", b.N), e.segments("bench/with-job", b.N)
			ta, tj := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if _, err := e.write(alone[i], false); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := e.write(withJob[i], true); err != nil {
					b.Fatal(err)
				}
				ta, tj = append(ta, t1.Sub(t0)), append(tj, time.Since(t1))
			}
			b.ReportMetric(float64(medianOf(ta).Microseconds()), "write-µs")
			b.ReportMetric(float64(medianOf(tj).Microseconds()), "write+job-µs")
			b.ReportMetric(float64(medianOf(tj))/float64(medianOf(ta)), "with-job/alone")
		})
	}
}

// BenchmarkJobApplyPaired applies, per iteration, one job at its target
// (Worker.Apply: decode, RunJob with the upstream receipt read in the
// same transaction, the handler's insert) and one fenced write of the
// same insert, on the same database.
func BenchmarkJobApplyPaired(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			e := newBenchEnv(b, be)
			jobs := make([]riverhop.Args, b.N)
			for i, m := range e.segments("bench/upstream", b.N) {
				j, err := e.write(m, true)
				if err != nil {
					b.Fatal(err)
				}
				wire, _ := j.MarshalJSON()
				jobs[i] = riverhop.Args{Hop: hop, Job: wire, Payload: []byte("k v")}
			}
			wk := &riverhop.Worker{Applier: downstream.Applier{Gate: e.g, DB: e.db, Handlers: map[string]downstream.Handler{hop: func(ctx context.Context, tx *sql.Tx, j *gate.Job, p []byte) error {
				_, err := tx.ExecContext(ctx, e.insert, j.Target, "v")
				return err
			}}}}
			writes := e.segments("bench/write", b.N)
			tw, tj := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if _, err := e.write(writes[i], false); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := wk.Apply(e.ctx, jobs[i]); err != nil {
					b.Fatal(err)
				}
				tw, tj = append(tw, t1.Sub(t0)), append(tj, time.Since(t1))
			}
			b.ReportMetric(float64(medianOf(tw).Microseconds()), "write-µs")
			b.ReportMetric(float64(medianOf(tj).Microseconds()), "job-apply-µs")
			b.ReportMetric(float64(medianOf(tj))/float64(medianOf(tw)), "job/write")
		})
	}
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
