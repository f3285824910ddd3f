// Tests that calls are counted by outcome on the server's private
// Prometheus registry, that store calls are timed, and that /metrics
// serves them in the text format.
package httpapi

import (
	"io"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/wire"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// collect returns every metric c currently reports.
func collect(t *testing.T, c prometheus.Collector) []*dto.Metric {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	var out []*dto.Metric
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		out = append(out, &d)
	}
	return out
}

// value is the value of a collector that reports one counter or gauge.
func value(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ms := collect(t, c)
	if len(ms) != 1 {
		t.Fatalf("%d metrics, want 1", len(ms))
	}
	if ms[0].Counter != nil {
		return ms[0].Counter.GetValue()
	}
	return ms[0].Gauge.GetValue()
}

func TestMetricsCountOutcomes(t *testing.T) {
	h := newHarness(t)
	a, err := h.alice.Acquire(bg, acq("inv/m", "r-1"))
	if err != nil {
		t.Fatal(err)
	}
	h.bob.Acquire(bg, acq("inv/m", "r-2"))  // BUSY
	h.anon.Acquire(bg, acq("inv/m", "r-3")) // 401: not an acquire outcome
	h.alice.Renew(bg, "inv/m", a.Grant.Lease)
	h.bob.Renew(bg, "inv/m", a.Grant.Lease) // NOT_HOLDER
	h.alice.Release(bg, "inv/m", a.Grant.Lease)

	m := h.metrics
	for _, c := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.acquires.WithLabelValues("ok"), 1},
		{m.acquires.WithLabelValues("BUSY"), 1},
		{m.renewals.WithLabelValues("ok"), 1},
		{m.renewals.WithLabelValues("NOT_HOLDER"), 1},
		{m.releases.WithLabelValues("ok"), 1},
		{m.calls.WithLabelValues("/v1/acquire", wire.CodeUnauthenticated), 1},
		{m.waiters, 0},
	} {
		if got := value(t, c.c); got != c.want {
			t.Errorf("%v = %v, want %v", c.c, got, c.want)
		}
	}
	if n := len(collect(t, m.storeLatency)); n == 0 {
		t.Error("no store latency observed")
	}
	if n := len(collect(t, m.acquires)); n != 2 {
		t.Errorf("acquire outcomes %d, want 2 (ok, BUSY; the 401 is not one)", n)
	}

	resp, err := h.srv.Client().Get(h.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, name := range []string{
		"fencegate_acquires_total", "fencegate_renewals_total", "fencegate_releases_total",
		"fencegate_expiries_total", "fencegate_waiters", "fencegate_handoff_seconds",
		"fencegate_store_seconds_bucket", "fencegate_http_requests_total", "go_goroutines",
	} {
		if !strings.Contains(string(body), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}
