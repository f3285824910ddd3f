// This file runs, when FENCEGATE_BENCH_REPORTER=1, a gate reporter beside
// BenchmarkWritePaired's gate, so that the same benchmark measures the
// write with and without one: every report.IntervalMsMin (the fastest a
// reporter goes) it reads the gate's state and pushes it over loopback
// HTTP to a real dashboard (a registry on a memory store), and every
// fenced write notes its answer in the reporter's Log (inside the timed
// part). Nothing is asserted; compare fenced-µs between the two runs.
package sqlgate_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/sqlreport"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memstore"
)

const benchGateToken = "bench-gate-token-0123456"

// benchReporter returns nil unless FENCEGATE_BENCH_REPORTER=1; then the
// Log the fenced writes note their answers in, with its reporter running
// until the benchmark ends.
func benchReporter(b *testing.B, e *env, be backend) *report.Log {
	if os.Getenv("FENCEGATE_BENCH_REPORTER") != "1" {
		return nil
	}
	store := memstore.New()
	reg, err := registry.New(store, registry.DefaultConfig(e.iss.Epoch), clock.System{}, e.iss.Key)
	if err != nil {
		b.Fatal(err)
	}
	auth, err := httpapi.ParseTokenFile([]byte(benchGateToken + " gate-bench\n"))
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	d, err := dashboard.New(dashboard.Config{Registry: reg, Store: store, Auth: auth, Viewers: []string{"gate-bench"},
		GateReporters: []string{"gate-bench"}, Signer: e.iss.Key, Logger: quiet, Authorizer: httpapi.AllowAll{}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler(http.NotFoundHandler()))
	b.Cleanup(srv.Close)
	read := e.db
	if be.dialect == sqlgate.SQLite { // a second, read-only handle: the writers' pool has one connection
		var path string
		if err := e.db.QueryRowContext(e.ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
			b.Fatal(err)
		}
		if read, err = sqlgate.OpenSQLiteReader(path); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { read.Close() })
	}
	log := report.NewLog(nil)
	src := &sqlreport.Gate{Gate: e.g, Read: read, Write: e.db}
	r, err := report.New(report.Config{URL: srv.URL, Token: benchGateToken, Source: src, Log: log, Counters: e.g.Counters(),
		IntervalMs: report.IntervalMsMin, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
		if err := r.LastError(); err != nil {
			b.Errorf("the reporter's last report failed: %v", err)
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ui/live", nil)
		req.Header.Set("Authorization", "Bearer "+benchGateToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(page), `data-gate="gate-bench"`) {
			b.Errorf("the dashboard never received a report")
		}
	})
	time.Sleep(50 * time.Millisecond) // let the first report go out
	return log
}
