package reconcile

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricsTimeout bounds each metrics read of the queue file.
const MetricsTimeout = 2 * time.Second

// Collectors returns gauges for a Prometheus registry:
// fencegate_client_reconcile_oldest_age_seconds (alert when it nears the
// deadline), fencegate_client_reconcile_open_items and
// fencegate_client_reconcile_overdue_items (alert when above 0).
func (q *Queue) Collectors() []prometheus.Collector {
	read := func(f func(ctx context.Context) float64) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), MetricsTimeout)
			defer cancel()
			return f(ctx)
		}
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegate_client_reconcile_oldest_age_seconds",
			Help: "Age of the oldest MUTATION_UNKNOWN item not yet reconciled (0 when none).",
		}, read(func(ctx context.Context) float64 {
			d, _ := q.OldestAge(ctx)
			return d.Seconds()
		})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegate_client_reconcile_open_items",
			Help: "MUTATION_UNKNOWN items not yet reconciled.",
		}, read(func(ctx context.Context) float64 {
			n, _, _ := q.Counts(ctx)
			return float64(n)
		})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegate_client_reconcile_overdue_items",
			Help: "MUTATION_UNKNOWN items past their reconciliation deadline (alarm when above 0).",
		}, read(func(ctx context.Context) float64 {
			_, n, _ := q.Counts(ctx)
			return float64(n)
		})),
	}
}
