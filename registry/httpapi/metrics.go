package httpapi

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate/registry"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcome label values: "ok", or the stable error code of the failure.
const outcomeOK = "ok"

// Metrics holds fencegate's Prometheus metrics on a private registry (never
// the process-global default, so two servers in one process, as in tests,
// do not collide). Every method is safe for concurrent use and on a nil
// *Metrics, where it does nothing.
type Metrics struct {
	reg          *prometheus.Registry
	calls        *prometheus.CounterVec      // endpoint, code
	acquires     *prometheus.CounterVec      // outcome
	renewals     *prometheus.CounterVec      // outcome
	releases     *prometheus.CounterVec      // outcome
	expiries     prometheus.Counter          // leases that ended by expiry
	waiters      prometheus.Gauge            // acquires now waiting
	handoff      prometheus.Histogram        // seconds
	storeLatency *prometheus.HistogramVec    // op, outcome; seconds
	httpLatency  *prometheus.HistogramVec    // endpoint, code; seconds
	space        atomic.Pointer[spaceSource] // the store-space gauges' source (metrics_space.go)
}

// handoffBuckets span 1ms to about 33s: a release-to-grant handoff is
// milliseconds; an expiry handoff is TTL plus lock-delay, seconds.
var handoffBuckets = prometheus.ExponentialBuckets(0.001, 2, 16)

// storeBuckets span 0.1ms to about 3.3s: etcd transactions on one machine
// take a millisecond or two; seconds mean trouble.
var storeBuckets = prometheus.ExponentialBuckets(0.0001, 2, 16)

// httpBuckets span 0.5ms to about 16s: a call is a store round trip or
// two; an acquire that waits takes up to its WaitMs (30s at most, in the
// +Inf bucket beyond 16s).
var httpBuckets = prometheus.ExponentialBuckets(0.0005, 2, 16)

// NewMetrics returns metrics registered on a new private registry, with the
// Go runtime and process collectors beside them.
func NewMetrics() *Metrics {
	outcome := []string{"outcome"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_http_requests_total", Help: "HTTP API calls by endpoint and response code (ok or the error code).",
		}, []string{"endpoint", "code"}),
		acquires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_acquires_total", Help: "Acquire calls by outcome (ok or the error code).",
		}, outcome),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_renewals_total", Help: "Renew calls by outcome (ok or the error code).",
		}, outcome),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_releases_total", Help: "Release calls by outcome (ok or the error code).",
		}, outcome),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegate_expiries_total", Help: "Leases this server saw end by expiry (registry clock).",
		}),
		waiters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_waiters", Help: "Acquire calls on this server now waiting for a resource.",
		}),
		handoff: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "fencegate_handoff_seconds", Help: "From a resource becoming free (release, or expiry plus lock-delay) to its next grant.",
			Buckets: handoffBuckets,
		}),
		storeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fencegate_store_seconds", Help: "Store call latency by operation and outcome.",
			Buckets: storeBuckets,
		}, []string{"op", "outcome"}),
		httpLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fencegate_http_request_duration_seconds", Help: "HTTP API call latency by endpoint (route) and response code (ok or the error code), waits included.",
			Buckets: httpBuckets,
		}, []string{"endpoint", "code"}),
	}
	m.reg.MustRegister(m.calls, m.acquires, m.renewals, m.releases, m.expiries,
		m.waiters, m.handoff, m.storeLatency, m.httpLatency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registerSpace()
	return m
}

// Registry returns the private Prometheus registry, for tests and for
// callers that add their own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func outcomeOf(code string) string {
	if code == "" {
		return outcomeOK
	}
	return code
}

func (m *Metrics) call(endpoint, code string) {
	if m != nil {
		m.calls.WithLabelValues(endpoint, outcomeOf(code)).Inc()
	}
}

func (m *Metrics) latencyOf(endpoint, outcome string, d time.Duration) {
	if m != nil {
		m.httpLatency.WithLabelValues(endpoint, outcome).Observe(d.Seconds())
	}
}

func (m *Metrics) acquire(code string) {
	if m != nil {
		m.acquires.WithLabelValues(outcomeOf(code)).Inc()
	}
}

func (m *Metrics) renew(code string) {
	if m != nil {
		m.renewals.WithLabelValues(outcomeOf(code)).Inc()
	}
}

func (m *Metrics) release(code string) {
	if m != nil {
		m.releases.WithLabelValues(outcomeOf(code)).Inc()
	}
}

// WaiterAdded and WaiterDone track acquires that are waiting.
func (m *Metrics) WaiterAdded() {
	if m != nil {
		m.waiters.Inc()
	}
}

// WaiterDone is the end of a wait WaiterAdded began.
func (m *Metrics) WaiterDone() {
	if m != nil {
		m.waiters.Dec()
	}
}

// Expired counts one lease that ended by expiry.
func (m *Metrics) Expired() {
	if m != nil {
		m.expiries.Inc()
	}
}

// Handoff records how long a resource stood free before its next grant.
func (m *Metrics) Handoff(d time.Duration) {
	if m != nil {
		m.handoff.Observe(d.Seconds())
	}
}

// StoreCall records one store call's latency; code is "" on success.
func (m *Metrics) StoreCall(op string, d time.Duration, code string) {
	if m != nil {
		m.storeLatency.WithLabelValues(op, outcomeOf(code)).Observe(d.Seconds())
	}
}

// *Metrics is the registry's Observer: serve sets it as
// registry.Config.Observer, which feeds fencegate_expiries_total and
// fencegate_handoff_seconds.
var _ registry.Observer = (*Metrics)(nil)
