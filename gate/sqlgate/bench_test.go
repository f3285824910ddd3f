// This file measures a fenced write against the identical plain write
// (same table, same database, same run) on SQLite FULL/NORMAL and
// PostgreSQL synchronous_commit on/off, and one hot resource against 64
// resources in parallel. Timings are reported, never asserted.
package sqlgate_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// benchBackends are the four durability settings the issue asks for.
func benchBackends() []backend {
	sqliteSync := func(level string) backend {
		return backend{"sqlite-" + level, sqlgate.SQLite, func(t testing.TB) *sql.DB {
			db, err := sqlgate.OpenSQLite(filepath.Join(t.TempDir(), "bench.db"), level)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}}
	}
	pgSync := func(on string) backend {
		return backend{"postgres-sync-" + on, sqlgate.Postgres, func(t testing.TB) *sql.DB {
			db, err := sql.Open("pgx", pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", on))
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(parallelWriters)
			db.SetMaxIdleConns(parallelWriters) // database/sql keeps 2 by default: reconnect churn
			t.Cleanup(func() { db.Close() })
			return db
		}}
	}
	return []backend{sqliteSync("FULL"), sqliteSync("NORMAL"), pgSync("on"), pgSync("off")}
}

var benchResource atomic.Uint64

// parallelWriters is the number of concurrent writers in BenchmarkParallel.
const parallelWriters = 64

// segments returns n mutations: segments 1..n of one operation under one
// grant on a fresh resource, so every one is accepted.
func segments(e *env, n int) []*gate.Mutation {
	r := fmt.Sprintf("bench/r%d", benchResource.Add(1))
	base := e.iss.Mutation(wr(r, 5, "op-bench"), 1, "")
	out := make([]*gate.Mutation, n)
	for i := range out {
		m := *base
		m.SegmentSeq = uint64(i + 1)
		m.PayloadDigest = gatetest.Payload(fmt.Sprint(i))
		out[i] = &m
	}
	return out
}

func plainWrite(ctx context.Context, db *sql.DB, m *gate.Mutation) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := write(m, "x")(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func BenchmarkWrite(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be, nil)
			b.Run("plain", func(b *testing.B) {
				ms := segments(e, b.N)
				b.ResetTimer()
				for _, m := range ms {
					if err := plainWrite(e.ctx, e.db, m); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("fenced", func(b *testing.B) {
				ms := segments(e, b.N)
				b.ResetTimer()
				for _, m := range ms {
					if _, err := e.g.Run(e.ctx, e.db, owner, m, write(m, "x")); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkParallel runs 64 concurrent writers: plain writes on 64
// resources (the baseline), fenced writes on 64 resources (each its own
// holder, every write accepted), and fenced writes on one hot resource,
// where each write comes with the next fence and the registry calls only
// the newest HELD — all 64 queue on one fence row, and the metric
// accepted/op shows how many of those decisions were accepts (the rest
// are STALE_OWNER/NOT_HELD rejections, as in a real handover storm).
func BenchmarkParallel(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run(be.name, func(b *testing.B) {
			var current atomic.Uint64
			reg := &syncRegistry{current: &current, fences: new(sync.Map)}
			e := newEnv(b, be, reg)
			perWriter := func(b *testing.B) func() []*gate.Mutation {
				var all [][]*gate.Mutation
				for range parallelWriters {
					all = append(all, segments(e, b.N))
				}
				var next atomic.Int64
				b.SetParallelism(parallelWriters / runtime.GOMAXPROCS(0))
				b.ResetTimer()
				return func() []*gate.Mutation { return all[next.Add(1)-1] }
			}
			b.Run("plain-64-resources", func(b *testing.B) {
				take := perWriter(b)
				b.RunParallel(func(pb *testing.PB) {
					ms := take()
					for i := 0; pb.Next(); i++ {
						if err := plainWrite(e.ctx, e.db, ms[i]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			b.Run("fenced-64-resources", func(b *testing.B) {
				take := perWriter(b)
				b.RunParallel(func(pb *testing.PB) {
					ms := take()
					for i := 0; pb.Next(); i++ {
						if _, err := e.g.Run(e.ctx, e.db, owner, ms[i], write(ms[i], "x")); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			b.Run("fenced-1-hot-resource", func(b *testing.B) {
				r := fmt.Sprintf("bench/hot%d", benchResource.Add(1))
				// Grants are signed before the timer (signing is the
				// registry's cost); verifying them is the gate's and is timed.
				first := current.Load() + 1
				ms := make([]*gate.Mutation, b.N)
				for i := range ms {
					fence := first + uint64(i)
					ms[i] = gatetest.WithoutStatus(e.iss.Mutation(wr(r, fence, fmt.Sprint("op-", fence)), 1, "p"))
					g, _ := grant.ParseGrant(ms[i].Grant)
					reg.fences.Store(g.Digest(), fence)
				}
				var accepted atomic.Uint64
				b.SetParallelism(parallelWriters / runtime.GOMAXPROCS(0))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						m := ms[current.Add(1)-first]
						_, err := e.g.Run(e.ctx, e.db, owner, m, write(m, "x"))
						switch gate.OutcomeOf(err) {
						case gate.Accepted:
							accepted.Add(1)
						case gate.StaleOwner, gate.NotHeld:
						default:
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(accepted.Load())/float64(b.N), "accepted/op")
			})
		})
	}
}
