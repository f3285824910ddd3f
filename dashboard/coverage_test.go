// Proves the page shows a gate's coverage count as its report carries it
// (the share of protected writes fenced, the ungated count, each table),
// flags ungated writes, and that a report whose coverage breaks the
// format is refused.
package dashboard_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/report"
)

func withCoverage(c *gate.Coverage) string {
	r := report.Report{Schema: report.SchemaReport, LogID: "l", IntervalMs: 500, ResourcesTotal: 1,
		Resources: []report.ResourceView{{Resource: resource, Mode: "enforce", HighestFence: 7}},
		Decisions: []report.Decision{}, Unknown: []report.UnknownOp{}, Results: []report.Result{}, Coverage: c}
	b, _ := json.Marshal(r)
	return string(b)
}

func TestPageShowsCoverage(t *testing.T) {
	h := newHarness(t, nil)
	bad := &gate.Coverage{Gated: 3, Ungated: 0, Tables: []gate.ProtectedTable{{Table: "ledger", Mode: "off", Resource: "resource"}}}
	if status, code := h.post(tokGate, withCoverage(bad)); status != http.StatusBadRequest || code != dashboard.CodeInvalid {
		t.Fatalf("a coverage with an unknown mode: %d %s", status, code)
	}
	more := &gate.Coverage{Gated: 3, Ungated: 0, Tables: []gate.ProtectedTable{{Table: "ledger", Mode: gate.ModeShadow, Resource: "resource", Ungated: 2}}}
	if status, code := h.post(tokGate, withCoverage(more)); status != http.StatusBadRequest || code != dashboard.CodeInvalid {
		t.Fatalf("a table with more ungated writes than the total: %d %s", status, code)
	}
	c := &gate.Coverage{Gated: 3, Ungated: 1, Tables: []gate.ProtectedTable{
		{Table: "audit", Mode: gate.ModeShadow, Resource: "'acct/' || account", Ungated: 1},
		{Table: "ledger", Mode: gate.ModeEnforce, Resource: "resource"}}}
	if status, _ := h.post(tokGate, withCoverage(c)); status != http.StatusOK {
		t.Fatalf("a report with coverage: %d", status)
	}
	p := h.page()
	for _, want := range []string{`<p class="coverage ungated">`, `protected writes fenced: <b class="coverage-ratio">75.00%</b>`,
		`ungated <span class="ungated-count">1</span>`, `data-table="ledger"`, `enforce, resource resource`,
		`shadow, resource &#39;acct/&#39; || account, 1 ungated`} {
		if !strings.Contains(p, want) {
			t.Errorf("the page lacks %q:\n%s", want, p)
		}
	}
}

// TestReportedCoverageReachesThePage: a SQLite gate's reporter carries
// the coverage its database counted (a direct write into a protected
// table in shadow mode, ungated) to the page.
func TestReportedCoverageReachesThePage(t *testing.T) {
	h := newHarness(t, nil)
	h.openGate()
	for _, s := range []string{`CREATE TABLE ledger (resource TEXT NOT NULL, v TEXT NOT NULL)`} {
		if _, err := h.db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.gate.Protect(h.ctx, h.db, "ledger", gate.ModeShadow, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Exec(`INSERT INTO ledger VALUES ('r', 'direct')`); err != nil {
		t.Fatal(err)
	}
	h.send(h.reporter(report.NewLog(h.clk)))
	if p := h.page(); !strings.Contains(p, `protected writes fenced: <b class="coverage-ratio">0.00%</b> · gated <span class="gated">0</span> · ungated <span class="ungated-count">1</span>`) {
		t.Fatalf("the page does not show the ungated write:\n%s", p)
	}
}
