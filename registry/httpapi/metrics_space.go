package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/registry"
)

// The store's space: what the engine holds against its quota, whether
// new grants are refused, and the maintenance that frees it
// (etcdstore.Space). Without a source (ZooKeeper, memory) every gauge
// reads 0.

// spaceSource is where the space gauges read; nil: none.
type spaceSource struct{ status func() registry.SpaceStatus }

// WatchSpace has the store-space metrics read status at each scrape.
func (m *Metrics) WatchSpace(status func() registry.SpaceStatus) {
	if m != nil {
		m.space.Store(&spaceSource{status: status})
	}
}

// registerSpace adds the store-space metrics to m's registry.
func (m *Metrics) registerSpace() {
	read := func(f func(registry.SpaceStatus) float64) func() float64 {
		return func() float64 {
			src := m.space.Load()
			if src == nil {
				return 0
			}
			return f(src.status())
		}
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	gauge := func(name, help string, f func(registry.SpaceStatus) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, read(f))
	}
	m.reg.MustRegister(
		gauge("fencegate_store_size_bytes", "The store's backend file, free pages included (etcd: the member nearest its quota).",
			func(s registry.SpaceStatus) float64 { return float64(s.SizeBytes) }),
		gauge("fencegate_store_size_in_use_bytes", "What the store's backend holds in use after compaction.",
			func(s registry.SpaceStatus) float64 { return float64(s.InUseBytes) }),
		gauge("fencegate_store_quota_bytes", "The store's space quota (etcd --quota-backend-bytes); 0 when not known.",
			func(s registry.SpaceStatus) float64 { return float64(s.QuotaBytes) }),
		gauge("fencegate_store_nospace", "1 while the store's own out-of-space alarm is raised (etcd NOSPACE: reads and deletes only).",
			func(s registry.SpaceStatus) float64 { return b2f(s.NoSpace) }),
		gauge("fencegate_store_space_low", "1 while new grants are refused with STORE_FULL (from 90% of the quota, or NOSPACE, until under 80%).",
			func(s registry.SpaceStatus) float64 { return b2f(s.Low) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fencegate_store_defragmentations_total",
			Help: "Defragmentations serve ran on its embedded etcd (each blocks the member while it runs)."},
			read(func(s registry.SpaceStatus) float64 { return float64(s.Defrags) })),
		gauge("fencegate_store_defragmentation_last_seconds", "How long the last defragmentation blocked the embedded etcd.",
			func(s registry.SpaceStatus) float64 { return s.DefragSeconds }),
	)
}
