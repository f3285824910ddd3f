// This file measures RunPgx against the plain write through pgx's own
// interface (BEGIN, INSERT, COMMIT on one connection), alternating op by
// op as WritePaired does; nothing is asserted.
package sqlgate_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// BenchmarkWritePairedPgx is WritePaired for pgx's own interface: the
// plain write is BEGIN, INSERT, COMMIT on a pgx connection, the fenced
// one RunPgx with the same INSERT, alternating on one connection.
func BenchmarkWritePairedPgx(b *testing.B) {
	for _, on := range []string{"on", "off"} {
		b.Run("postgres-sync-"+on, func(b *testing.B) {
			dsn := pgtest.WithParam(pgtest.NewDatabase(b), "synchronous_commit", on)
			e := newEnv(b, backend{"postgres", sqlgate.Postgres, func(t testing.TB) *sql.DB {
				db, err := sql.Open("pgx", dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}}, nil)
			conn, err := pgx.Connect(e.ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(e.ctx)
			plain, fenced := segments(e, b.N), segments(e, b.N)
			tp, tf := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if err := pgxPlainWrite(e.ctx, conn, plain[i]); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := e.g.RunPgx(e.ctx, conn, owner, fenced[i], pgxWrite(fenced[i])); err != nil {
					b.Fatal(err)
				}
				tp, tf = append(tp, t1.Sub(t0)), append(tf, time.Since(t1))
			}
			mp, mf := median(tp), median(tf)
			b.ReportMetric(float64(mp.Microseconds()), "plain-µs")
			b.ReportMetric(float64(mf.Microseconds()), "fenced-µs")
			b.ReportMetric(float64(mf)/float64(mp), "fenced/plain")
		})
	}
}
