// Package benchpair times a benchmark's writes against one another op by
// op: each iteration does one write of every lane, in an order that
// rotates with the iteration, so that all of them see the same load on a
// shared machine, and the benchmark reports each lane's median and their
// ratios. The gates' paired benchmarks (sqlgate, pggate, redisgate) use
// it; scripts/bench-all.sh copies it, with their bench files, onto an
// older revision it compares against.
package benchpair

import (
	"slices"
	"testing"
	"time"
)

// Lane is one write a paired benchmark rotates.
type Lane struct {
	// Name prefixes the lane's metrics: Name-µs, and Name/Other for its
	// ratio to each lane before it.
	Name string
	// Write does the lane's write of iteration i.
	Write func(i int) error
}

// Run does Write(i) of every lane for i in [0, b.N), rotating their order
// with i, and fails b at a write's error. It then reports each lane's
// median time (Name-µs) and, for each pair, the later lane's median over
// the earlier one's (Later/Earlier): with lanes plain, fence, fenced, the
// gate against the hand-rolled fence is fenced/fence. It resets b's timer
// first.
func Run(b *testing.B, lanes ...Lane) {
	times := make([][]time.Duration, len(lanes))
	for k := range times {
		times[k] = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range lanes {
			j := (i + k) % len(lanes)
			t0 := time.Now()
			if err := lanes[j].Write(i); err != nil {
				b.Fatalf("%s: %v", lanes[j].Name, err)
			}
			times[j] = append(times[j], time.Since(t0))
		}
	}
	meds := make([]time.Duration, len(lanes))
	for k, l := range lanes {
		meds[k] = Median(times[k])
		b.ReportMetric(float64(meds[k].Microseconds()), l.Name+"-µs")
		for j := range k {
			b.ReportMetric(float64(meds[k])/float64(meds[j]), l.Name+"/"+lanes[j].Name)
		}
	}
}

// Median is the median of ds (the upper one of an even count); ds is not
// changed.
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
