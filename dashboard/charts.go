package dashboard

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Sampling of the rate chart.
const (
	// SampleIntervalMs is how often acquire and renew counts are sampled, 2 s.
	SampleIntervalMs = 2000
	// SamplesMax is how many samples the rate chart spans (5 min).
	SamplesMax = 150
)

// Metric names read from the API's registry.
const (
	metricAcquires = "fencegate_acquires_total"
	metricRenewals = "fencegate_renewals_total"
	metricHandoff  = "fencegate_handoff_seconds"
)

// sample is the successful acquires and renewals counted by an instant.
type sample struct {
	at                 time.Time
	acquires, renewals float64
}

// sampler keeps the last SamplesMax samples. Safe for concurrent use.
type sampler struct {
	g prometheus.Gatherer

	mu   sync.Mutex
	ring []sample
}

func newSampler(g prometheus.Gatherer) *sampler { return &sampler{g: g} }

// take gathers one sample at now.
func (s *sampler) take(now time.Time) {
	if s.g == nil {
		return
	}
	fams, err := s.g.Gather()
	if err != nil {
		return
	}
	sm := sample{at: now, acquires: okCount(fams, metricAcquires), renewals: okCount(fams, metricRenewals)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ring = append(s.ring, sm)
	if len(s.ring) > SamplesMax {
		s.ring = s.ring[len(s.ring)-SamplesMax:]
	}
}

// Rate is one interval's rates, per second.
type Rate struct {
	At                 time.Time
	Acquires, Renewals float64
}

// rates returns the per-second rates between consecutive samples.
func (s *sampler) rates() []Rate {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Rate
	for i := 1; i < len(s.ring); i++ {
		a, b := s.ring[i-1], s.ring[i]
		dt := b.at.Sub(a.at).Seconds()
		if dt <= 0 {
			continue
		}
		out = append(out, Rate{At: b.at, Acquires: math.Max(0, b.acquires-a.acquires) / dt, Renewals: math.Max(0, b.renewals-a.renewals) / dt})
	}
	return out
}

// okCount sums a counter's outcome="ok" series.
func okCount(fams []*dto.MetricFamily, name string) float64 {
	var n float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == "ok" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// Bucket is one histogram bucket: the count of observations in
// (previous bound, UpperS].
type Bucket struct {
	UpperS float64 // +Inf for the last
	Count  uint64
}

// handoff returns the handoff histogram as per-bucket counts.
func (s *sampler) handoff() []Bucket {
	if s.g == nil {
		return nil
	}
	fams, err := s.g.Gather()
	if err != nil {
		return nil
	}
	for _, f := range fams {
		if f.GetName() != metricHandoff || len(f.GetMetric()) == 0 {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		var out []Bucket
		var prev uint64
		for _, b := range h.GetBucket() {
			out = append(out, Bucket{UpperS: b.GetUpperBound(), Count: b.GetCumulativeCount() - prev})
			prev = b.GetCumulativeCount()
		}
		return append(out, Bucket{UpperS: math.Inf(1), Count: h.GetSampleCount() - prev})
	}
	return nil
}

// quantile is the upper bound of the bucket holding the q-th observation
// (an upper estimate, as Prometheus' buckets allow), or 0 with none.
func quantile(bs []Bucket, q float64) float64 {
	var total uint64
	for _, b := range bs {
		total += b.Count
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for _, b := range bs {
		seen += b.Count
		if seen >= rank {
			return b.UpperS
		}
	}
	return math.Inf(1)
}
