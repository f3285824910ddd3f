// Package gatemetrics exposes a gate's per-outcome decision counters to
// Prometheus, keeping the gate core free of the client library.
package gatemetrics

import (
	"github.com/fencegate/fencegate/gate"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports gate.Counters as fencegate_gate_decisions_total
// {outcome="ACCEPTED"|…}, one series per outcome, zeros included so
// alerts on rare outcomes (FENCE_REGRESSION) have a series to watch.
type Collector struct {
	counters *gate.Counters
	desc     *prometheus.Desc
}

// NewCollector returns a collector over c; constLabels tell several gates
// apart (e.g. {"gate": "billing-db"}).
func NewCollector(c *gate.Counters, constLabels prometheus.Labels) *Collector {
	return &Collector{counters: c, desc: prometheus.NewDesc(
		"fencegate_gate_decisions_total",
		"Gate decisions by outcome (ACCEPTED, REPLAYED, STALE_OWNER, FENCE_REGRESSION, ...).",
		[]string{"outcome"}, constLabels)}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range c.counters.Snapshot() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n.N), string(n.Outcome))
	}
}
