// This file measures the fenced write against the plain write op by op:
// each iteration does one plain write and then one fenced write on the
// same database, so both see the same load on a shared machine. It
// reports the medians of both and their ratio; nothing is asserted. With
// FENCEGATE_BENCH_REPORTER=1 a gate reporter runs beside it
// (bench_reporter_test.go).
package sqlgate_test

import (
	"slices"
	"testing"
	"time"
)

func BenchmarkWritePaired(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run(be.name, func(b *testing.B) {
			e := newEnv(b, be, nil)
			log := benchReporter(b, e, be)
			plain, fenced := segments(e, b.N), segments(e, b.N)
			tp, tf := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if err := plainWrite(e.ctx, e.db, plain[i]); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				_, err := e.g.Run(e.ctx, e.db, owner, fenced[i], write(fenced[i], "x"))
				if log != nil {
					log.Note(owner, fenced[i], err)
				}
				if err != nil {
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

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
