// This file proves nothing on its own: it runs a real Registry (memory
// store), the real API and the dashboard on an httptest server, on one
// fake clock, and a real gate (gate/sqlgate on SQLite) reporting to it
// through a real Reporter.
package dashboard_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/sqlreport"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

const (
	tokAdmin  = "admin-token-0123456789"
	tokViewer = "viewer-token-012345678"
	tokWorker = "worker-token-012345678"
	tokGate   = "gate-token-01234567890"
	tokGate2  = "gate2-token-0123456789"
	tokBreak  = "breaker-token-01234567"
	resource  = "invoice-batch/2026-07-19"
)

// harnessPolicy: the workers lock invoice batches, the gates and the
// viewers see them (ops-viewer also what was granted "elsewhere/"), the
// on-call viewer ops-breaker may break them, and nobody but an admin
// sees "other-team/".
const harnessPolicy = `{"schema": "resourcePolicy.v1", "rules": [
  {"identities": ["worker-*"], "resources": ["invoice-batch/*"], "verbs": ["acquire"]},
  {"identities": ["gate-1", "gate-2", "ops-viewer", "ops-breaker"], "resources": ["invoice-batch/*"], "verbs": ["see"]},
  {"identities": ["ops-breaker"], "resources": ["invoice-batch/*"], "verbs": ["break"]},
  {"identities": ["ops-viewer"], "resources": ["elsewhere/*"], "verbs": ["see"]}]}`

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

type harness struct {
	t      *testing.T
	ctx    context.Context
	clk    *fakeclock.Clock
	iss    *gatetest.Issuer // the registry's key, which the gate trusts
	policy *httpapi.Policy  // harnessPolicy
	reg    *registry.Registry
	d      *dashboard.Dashboard
	api    *httpapi.Server
	srv    *httptest.Server
	logs   *lockedBuffer
	http   *http.Client
	gate   *sqlgate.Gate
	db     *sql.DB
	dbDir  string
	seq    int // next's
}

// newHarness starts the registry and dashboard; signer signs the
// dashboard's commands (nil: the registry's key).
func newHarness(t *testing.T, signer *gatetest.Issuer) *harness {
	return newHarnessWith(t, signer, nil)
}

// newHarnessWith is newHarness with edit (if not nil) changing the
// dashboard's Config before it starts.
func newHarnessWith(t *testing.T, signer *gatetest.Issuer, edit func(*dashboard.Config)) *harness {
	h := &harness{t: t, ctx: context.Background(), clk: fakeclock.New(gatetest.T0.Add(time.Second)), iss: gatetest.NewIssuer("registry"), logs: &lockedBuffer{}}
	if signer == nil {
		signer = h.iss
	}
	store := memstore.New()
	var err error
	h.reg, err = registry.New(store, registry.DefaultConfig(gatetest.Epoch), h.clk, h.iss.Key)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := httpapi.ParseTokenFile([]byte(tokAdmin + " ops-admin\n" + tokViewer + " ops-viewer\n" + tokWorker + " worker-1\n" + tokGate + " gate-1\n" + tokGate2 + " gate-2\n" + tokBreak + " ops-breaker\n"))
	if err != nil {
		t.Fatal(err)
	}
	h.policy, err = httpapi.ParsePolicy([]byte(harnessPolicy))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(h.logs, nil))
	metrics := httpapi.NewMetrics()
	cfg := dashboard.Config{Registry: h.reg, Store: store, Auth: auth, Admins: []string{"ops-admin"},
		Viewers: []string{"ops-viewer", "ops-breaker"}, GateReporters: []string{"gate-1", "gate-2"}, Signer: signer.Key, Authorizer: h.policy,
		Metrics: metrics.Registry(), Clock: h.clk, Logger: logger, RequestLog: true}
	if edit != nil {
		edit(&cfg)
	}
	h.d, err = dashboard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), httpapi.BundleFileName)
	if err := os.WriteFile(bundle, httpapi.BundleFor(h.iss.Key, "", "").Marshal(), 0o600); err != nil {
		t.Fatal(err)
	}
	h.api, err = httpapi.NewServer(httpapi.Config{Registry: h.reg, Store: store, Auth: auth, Admins: httpapi.Admins{"ops-admin"}, Authorizer: h.policy,
		TrustBundle: httpapi.FileBundlePublisher(bundle, h.iss.Key), Metrics: metrics, Logger: logger, RequestLog: true, Seen: h.d.NoteResource})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(h.d.Handler(h.api))
	t.Cleanup(h.srv.Close)
	h.http = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return h
}

// do sends a request with token (none when ""); form values go in the
// body of a POST, in the query of a GET.
func (h *harness) do(method, path, token string, form url.Values) (int, string, http.Header) {
	h.t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(form.Encode())
	} else if form != nil {
		path += "?" + form.Encode()
	}
	req, err := http.NewRequest(method, h.srv.URL+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// page returns /ui/ as the viewer.
func (h *harness) page() string {
	h.t.Helper()
	h.clk.Advance(dashboard.ViewRefreshMs * time.Millisecond) // past the page cache
	code, body, _ := h.do(http.MethodGet, "/ui/", tokViewer, nil)
	if code != http.StatusOK {
		h.t.Fatalf("GET /ui/: %d\n%s", code, body)
	}
	return body
}

// openGate migrates a SQLite gate that trusts the registry's key.
func (h *harness) openGate() {
	h.dbDir = h.t.TempDir()
	var err error
	if h.db, err = sqlgate.OpenSQLite(filepath.Join(h.dbDir, "gate.db"), "NORMAL"); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { h.db.Close() })
	h.gate, err = sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: h.iss.Verifier}, Clock: h.clk})
	if err == nil {
		err = h.gate.Migrate(h.ctx, h.db)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// reporter is gate-1's reporter on the harness's gate, taking commands.
func (h *harness) reporter(log *report.Log) *report.Reporter {
	rd, err := sqlgate.OpenSQLiteReader(filepath.Join(h.dbDir, "gate.db"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { rd.Close() })
	src := &sqlreport.Gate{Gate: h.gate, Read: rd, Write: h.db}
	r, err := report.New(report.Config{URL: h.srv.URL, Token: tokGate, Service: "ledger", Source: src, Log: log,
		Counters: h.gate.Counters(), Clock: h.clk, Logger: slog.New(slog.NewTextHandler(h.logs, nil)),
		Commands: &report.CommandConfig{Identity: "gate-1", Verifier: h.iss.Verifier, Resumer: src}})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// send runs one report, after the registry's spacing.
func (h *harness) send(r *report.Reporter) {
	h.t.Helper()
	h.clk.Advance(report.ReportSpacingMsMin * time.Millisecond)
	if err := r.Once(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}
