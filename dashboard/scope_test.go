// Proves the resource policy on the page: a viewer sees a resource only
// where the policy lets it see it (rows, each gate's view, decisions,
// open UNKNOWN operations, the live part), an admin sees every resource,
// and a gate's report keeps only what the gate may see, each resource it
// may not see audited once however often the gate reports it.
package dashboard_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/wire"
)

const hidden = "other-team/batch-9"

// twoTeams is a report by a gate about resource and hidden.
func twoTeams() string {
	r := report.Report{Schema: report.SchemaReport, LogID: "l", IntervalMs: 500, ResourcesTotal: 2,
		Resources: []report.ResourceView{{Resource: resource, Mode: "enforce", HighestFence: 7}, {Resource: hidden, Mode: "enforce", HighestFence: 3, Paused: true, PausedReason: "FENCE_REGRESSION"}},
		Decisions: []report.Decision{{Seq: 1, Resource: resource, Outcome: "ACCEPTED", Caller: "worker-1"}, {Seq: 2, Resource: hidden, Outcome: "STALE_OWNER", Caller: "team-b-worker"}},
		Unknown:   []report.UnknownOp{{Resource: resource, OperationID: "op-a"}, {Resource: hidden, OperationID: "op-b"}}, UnknownOpen: 2, Results: []report.Result{}}
	b, _ := json.Marshal(r)
	return string(b)
}

func TestViewersSeeOnlyWhatThePolicyLetsThem(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.reg.Acquire(h.ctx, "team-b-worker", wire.AcquireRequest{Resource: hidden, OperationID: "op", OperationClass: "settle", RequestID: "r-b"}); err != nil {
		t.Fatal(err)
	}
	h.d.NoteResource(hidden)
	h.d.NoteResource(resource)
	for range 2 {
		h.clk.Advance(report.ReportSpacingMsMin * time.Millisecond)
		if status, code := h.post(tokGate, twoTeams()); status != http.StatusOK {
			t.Fatalf("report: %d %s", status, code)
		}
	}
	viewer := h.page()
	for _, want := range []string{`tr class="res" data-resource="` + resource + `"`, `data-outcome="ACCEPTED"`, resource + "/op-a"} {
		if !strings.Contains(viewer, want) {
			t.Errorf("the viewer's page lacks %q", want)
		}
	}
	_, live, _ := h.do(http.MethodGet, "/ui/live", tokViewer, nil)
	for name, body := range map[string]string{"page": viewer, "live part": live} {
		if strings.Contains(body, hidden) || strings.Contains(body, "team-b-worker") || strings.Contains(body, "op-b") {
			t.Errorf("the viewer's %s shows the resource it may not see:\n%s", name, body)
		}
	}
	_, admin, _ := h.do(http.MethodGet, "/ui/", tokAdmin, nil)
	if !strings.Contains(admin, `data-resource="`+hidden+`"`) || !strings.Contains(admin, "team-b-worker") {
		t.Errorf("the admin's page lacks %s and its holder", hidden)
	}
	if strings.Contains(admin, "FENCE_REGRESSION") || strings.Contains(admin, "op-b") {
		t.Error("the gate's view of a resource it may not see was kept")
	}
	refusal := `msg="access refused" audit=true identity=gate-1 verb=see resource=` + hidden + ` path=/v1/gates/report outcome=FORBIDDEN_RESOURCE via=dashboard`
	if n := strings.Count(h.logs.String(), refusal); n != 1 {
		t.Errorf("%d lines %q after two reports, want 1:\n%s", n, refusal, h.logs)
	}
}
