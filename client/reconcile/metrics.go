package reconcile

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricsTimeout bounds each metrics read of the queue file.
const MetricsTimeout = 2 * time.Second

var (
	oldestAgeDesc = prometheus.NewDesc("fencegate_client_reconcile_oldest_age_seconds",
		"Age of the oldest MUTATION_UNKNOWN item not yet reconciled (0 when none).", nil, nil)
	openItemsDesc = prometheus.NewDesc("fencegate_client_reconcile_open_items",
		"MUTATION_UNKNOWN items not yet reconciled.", nil, nil)
	overdueItemsDesc = prometheus.NewDesc("fencegate_client_reconcile_overdue_items",
		"MUTATION_UNKNOWN items past their reconciliation deadline (alarm when above 0).", nil, nil)
)

// Collectors returns the queue's collector for a Prometheus registry:
// fencegate_client_reconcile_oldest_age_seconds (alert when it nears the
// deadline), fencegate_client_reconcile_open_items and
// fencegate_client_reconcile_overdue_items (alert when above 0). A scrape
// reads the queue once per gauge family; a read that fails makes the
// scrape fail with the cause (an invalid metric), never a healthy 0.
func (q *Queue) Collectors() []prometheus.Collector {
	return []prometheus.Collector{queueCollector{q}}
}

type queueCollector struct{ q *Queue }

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- oldestAgeDesc
	ch <- openItemsDesc
	ch <- overdueItemsDesc
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), MetricsTimeout)
	defer cancel()
	if age, err := c.q.OldestAge(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(oldestAgeDesc, err)
	} else {
		ch <- prometheus.MustNewConstMetric(oldestAgeDesc, prometheus.GaugeValue, age.Seconds())
	}
	open, overdue, err := c.q.Counts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(openItemsDesc, err)
		ch <- prometheus.NewInvalidMetric(overdueItemsDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(openItemsDesc, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(overdueItemsDesc, prometheus.GaugeValue, float64(overdue))
}
