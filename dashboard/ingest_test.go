// Proves the report endpoint's checks in order (method, identity, media
// type, gate reporter, size, format, rate), that a report changes what the page shows,
// that one gate cannot settle another gate's command, and that a silent
// gate is shown stale and then forgotten.
package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/gate/report"
)

func (h *harness) post(tok string, body string) (int, string) {
	h.t.Helper()
	return h.postAs(tok, "application/json", body)
}

// postAs sends a report with the Content-Type ctype ("": none).
func (h *harness) postAs(tok, ctype, body string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+report.ReportPath, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Code
}

func minimal(results ...report.Result) string {
	r := report.Report{Schema: report.SchemaReport, LogID: "l", IntervalMs: 500, ResourcesTotal: 1,
		Resources: []report.ResourceView{{Resource: resource, Mode: "enforce", HighestFence: 7}},
		Decisions: []report.Decision{}, Unknown: []report.UnknownOp{}, Results: append([]report.Result{}, results...)}
	b, _ := json.Marshal(r)
	return string(b)
}

func TestReportEndpointChecks(t *testing.T) {
	h := newHarness(t, nil)
	const js = "application/json"
	for name, c := range map[string]struct {
		tok, ctype, body string
		status           int
		code             string
	}{
		"no identity":  {"", js, minimal(), http.StatusUnauthorized, "UNAUTHENTICATED"},
		"as text":      {tokGate, "text/plain", minimal(), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		"as a form":    {tokGate, "application/x-www-form-urlencoded", minimal(), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		"untyped":      {tokGate, "", minimal(), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		"not a gate":   {tokWorker, js, minimal(), http.StatusForbidden, "FORBIDDEN"},
		"oversized":    {tokGate, js, `{"service":"` + strings.Repeat("x", report.ReportBytesMax) + `"}`, http.StatusRequestEntityTooLarge, "TOO_LARGE"},
		"not a report": {tokGate, js, `{"schema":"gateReport.v1","resources":[{"resource":"../x","mode":"enforce"}]}`, http.StatusBadRequest, dashboard.CodeInvalid},
	} {
		if status, code := h.postAs(c.tok, c.ctype, c.body); status != c.status || code != c.code {
			t.Errorf("%s: %d %s, want %d %s", name, status, code, c.status, c.code)
		}
	}
	if code, _, _ := h.do(http.MethodGet, report.ReportPath, tokGate, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", code)
	}
	if strings.Contains(h.page(), `data-gate="gate-1"`) {
		t.Fatal("a refused report reached the page")
	}
	if status, _ := h.post(tokGate, minimal()); status != http.StatusOK {
		t.Fatalf("a valid report: %d", status)
	}
	if status, code := h.post(tokGate, minimal()); status != http.StatusTooManyRequests || code != dashboard.CodeRateLimited {
		t.Errorf("a second report at once: %d %s, want 429", status, code)
	}
	h.clk.Advance(report.ReportSpacingMsMin * time.Millisecond)
	if status, _ := h.post(tokGate, minimal()); status != http.StatusOK {
		t.Errorf("after the spacing: %d", status)
	}
	if p := h.page(); !strings.Contains(p, `data-gate="gate-1"`) || !strings.Contains(p, "gate-1: 7 · enforce") {
		t.Errorf("the page does not show the gate's view:\n%s", p)
	}
}

func TestAGateCannotSettleAnotherGatesCommand(t *testing.T) {
	h := newHarness(t, nil)
	h.post(tokGate, minimal())
	h.clk.Advance(report.ReportSpacingMsMin * time.Millisecond)
	floor := url.Values{"kind": {"raise-floor"}, "resource": {resource}, "value": {"7"}, "note": {"INC"}}
	h.act(floor, resource)
	id := h.act(resumeForm("7"), resource)
	h.post(tokGate2, minimal(report.Result{ID: id, Outcome: report.ResultApplied, Message: "forged"}))
	if p := h.page(); !strings.Contains(p, `data-id="`+id+`" data-kind="gate-resume" data-state="queued"`) {
		t.Fatalf("gate-2 settled gate-1's command:\n%s", p)
	}
	h.clk.Advance(report.ReportSpacingMsMin * time.Millisecond)
	h.post(tokGate, minimal(report.Result{ID: id, Outcome: report.ResultRefused, Message: "not paused"}))
	if p := h.page(); !strings.Contains(p, `data-id="`+id+`" data-kind="gate-resume" data-state="refused"`) {
		t.Errorf("gate-1's own answer did not settle it:\n%s", p)
	}
}

func TestSilentGateGoesStaleThenAway(t *testing.T) {
	h := newHarness(t, nil)
	h.post(tokGate, minimal())
	h.clk.Advance(dashboard.GateStaleIntervals*report.IntervalMsMin*time.Millisecond + 2*time.Second)
	if p := h.page(); !strings.Contains(p, "gate gate-1 has not reported for") || !strings.Contains(p, "STALE") {
		t.Errorf("a silent gate is not flagged:\n%s", p)
	}
	h.clk.Advance(dashboard.GateForgetMs * time.Millisecond)
	if strings.Contains(h.page(), `data-gate="gate-1"`) {
		t.Error("a gate silent for GateForgetMs is still shown")
	}
}

func TestTooManyPendingCommandsIsShown(t *testing.T) {
	h := newHarness(t, nil)
	h.post(tokGate, minimal())
	h.act(url.Values{"kind": {"raise-floor"}, "resource": {resource}, "value": {"9"}, "note": {"INC"}}, resource)
	var last string
	for range dashboard.CommandsPendingMax + 1 {
		last = h.act(resumeForm("8"), resource)
	}
	if p := h.page(); !strings.Contains(p, `data-id="`+last+`" data-kind="gate-resume" data-state="error"`) || !strings.Contains(p, "too many commands pending") {
		t.Errorf("the refused resume is not shown as an error:\n%s", p)
	}
}
