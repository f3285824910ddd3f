package gatemetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StateTimeout bounds the database read behind one scrape, 2s.
const StateTimeout = 2 * time.Second

// PausedFunc reports how many resources a gate has paused and the alarm
// instant (Unix ms) of the longest-paused one. For gate/sqlgate:
//
//	func(ctx context.Context) (int, int64, error) { return g.Paused(ctx, db) }
type PausedFunc func(ctx context.Context) (n int, oldestAlarmMs int64, err error)

// StateCollector exports what the gate's tables say at scrape time:
//
//	fencegate_gate_paused_resources           resources paused by FENCE_REGRESSION (alert above 0)
//	fencegate_gate_paused_oldest_age_seconds  since the oldest pause's alarm (0 when none)
//	fencegate_gate_state_up                   1 if the read succeeded, 0 if not
type StateCollector struct {
	read   PausedFunc
	now    func() time.Time
	paused *prometheus.Desc
	age    *prometheus.Desc
	up     *prometheus.Desc
}

// NewStateCollector calls paused at every scrape; now is the gate's clock
// (nil: time.Now). The package links no adapter: any gate that can count
// its paused resources plugs in.
func NewStateCollector(paused PausedFunc, now func() time.Time, constLabels prometheus.Labels) *StateCollector {
	if now == nil {
		now = time.Now
	}
	return &StateCollector{read: paused, now: now,
		paused: prometheus.NewDesc("fencegate_gate_paused_resources", "Resources paused by FENCE_REGRESSION and not yet resumed.", nil, constLabels),
		age:    prometheus.NewDesc("fencegate_gate_paused_oldest_age_seconds", "Seconds since the FENCE_REGRESSION alarm of the longest-paused resource (0 when none is paused).", nil, constLabels),
		up:     prometheus.NewDesc("fencegate_gate_state_up", "1 if the last scrape read the gate's tables, else 0.", nil, constLabels),
	}
}

// Describe implements prometheus.Collector.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.paused
	ch <- c.age
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), StateTimeout)
	defer cancel()
	n, oldestMs, err := c.read(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	age := 0.0
	if n > 0 && oldestMs > 0 {
		age = max(0, c.now().Sub(time.UnixMilli(oldestMs)).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age)
}
