// Proves the report format's bounds on the receiving side (Decode refuses
// whatever breaks them, coverage included, and nothing else) and that the decision Log keeps
// exactly the last LogMax answers with their codes and reasons.
package report_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func validReport() report.Report {
	return report.Report{Schema: report.SchemaReport, Service: "ledger", LogID: "abc", IntervalMs: 2000,
		Counters:       map[string]uint64{"ACCEPTED": 3, "STALE_OWNER": 1},
		Resources:      []report.ResourceView{{Resource: "invoice-batch/2026-07-19", Mode: "enforce", HighestFence: 2}},
		ResourcesTotal: 1,
		Decisions:      []report.Decision{{Seq: 1, Resource: "invoice-batch/2026-07-19", Fence: 1, Outcome: "STALE_OWNER", Reason: "fence 1 < highest 2"}},
		Unknown:        []report.UnknownOp{}, Results: []report.Result{},
		Coverage: &gate.Coverage{Gated: 4, Ungated: 1, Tables: []gate.ProtectedTable{{Table: "ledger", Mode: gate.ModeShadow, Resource: "resource", Ungated: 1}}}}
}

func TestDecodeKeepsBounds(t *testing.T) {
	good, _ := json.Marshal(validReport())
	if _, err := report.Decode(good); err != nil {
		t.Fatalf("a valid report: %v", err)
	}
	long := strings.Repeat("x", report.TextBytesMax+1)
	for name, edit := range map[string]func(r *report.Report){
		"schema":             func(r *report.Report) { r.Schema = "gateReport.v0" },
		"resource name":      func(r *report.Report) { r.Resources[0].Resource = "../etc" },
		"mode":               func(r *report.Report) { r.Resources[0].Mode = "off" },
		"decision outcome":   func(r *report.Report) { r.Decisions[0].Outcome = "OK" },
		"counter outcome":    func(r *report.Report) { r.Counters["MAYBE"] = 1 },
		"long reason":        func(r *report.Report) { r.Decisions[0].Reason = long },
		"long service":       func(r *report.Report) { r.Service = long },
		"totals":             func(r *report.Report) { r.ResourcesTotal = 0 },
		"too many resources": func(r *report.Report) { r.Resources = make([]report.ResourceView, report.ResourcesPerReportMax+1) },
		"too many decisions": func(r *report.Report) {
			for range report.DecisionsPerReportMax {
				r.Decisions = append(r.Decisions, r.Decisions[0])
			}
		},
		"too many records": func(r *report.Report) {
			r.Resources[0].Recent = make([]report.RecordView, report.RecordsPerResourceMax+1)
		},
		"table mode":         func(r *report.Report) { r.Coverage.Tables[0].Mode = "off" },
		"unnamed table":      func(r *report.Report) { r.Coverage.Tables[0].Table = "" },
		"long resource expr": func(r *report.Report) { r.Coverage.Tables[0].Resource = long },
		"ungated over total": func(r *report.Report) { r.Coverage.Tables[0].Ungated = 2 },
		"too many tables": func(r *report.Report) {
			r.Coverage.Tables = make([]gate.ProtectedTable, report.TablesPerReportMax+1)
		},
	} {
		r := validReport()
		edit(&r)
		b, _ := json.Marshal(r)
		if _, err := report.Decode(b); !errors.Is(err, report.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for name, b := range map[string][]byte{
		"unknown field": []byte(strings.Replace(string(good), `"schema"`, `"extra":1,"schema"`, 1)),
		"trailing data": append(append([]byte{}, good...), []byte(` {}`)...),
		"oversized":     []byte(`{"service":"` + strings.Repeat("x", report.ReportBytesMax) + `"}`),
	} {
		if _, err := report.Decode(b); !errors.Is(err, report.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestLogKeepsTheLastDecisions(t *testing.T) {
	clk := fakeclock.New(gatetest.T0)
	l := report.NewLog(clk)
	m := &gate.Mutation{Resource: "invoice-batch/2026-07-19", FenceToken: 1, SegmentSeq: 1}
	for i := range report.LogMax + 6 {
		l.Note("worker-a", m, nil)
		if i == report.LogMax+4 {
			l.Note("worker-a", m, &gate.Rejection{Outcome: gate.StaleOwner, Reason: "fence 1 < highest 2", HighestFence: 2})
			l.Note("worker-a", m, fmt.Errorf("database is locked"))
		}
	}
	got := l.Last(1000)
	if len(got) != report.LogMax {
		t.Fatalf("kept %d, want %d", len(got), report.LogMax)
	}
	if first, last := got[0].Seq, got[len(got)-1].Seq; first != 9 || last != report.LogMax+8 {
		t.Fatalf("kept seqs %d..%d, want 9..%d", first, last, report.LogMax+8)
	}
	stale, broken := got[len(got)-3], got[len(got)-2]
	if stale.Outcome != "STALE_OWNER" || stale.Reason != "fence 1 < highest 2" || stale.HighestFence != 2 {
		t.Errorf("the rejection was noted as %+v", stale)
	}
	if broken.Outcome != report.OutcomeError || broken.Reason != "database is locked" {
		t.Errorf("the database error was noted as %+v", broken)
	}
	if n := len(l.Last(2)); n != 2 {
		t.Errorf("Last(2) returned %d", n)
	}
	if report.NewLog(nil).ID() == l.ID() {
		t.Error("two logs share an ID")
	}
}

func TestCutKeepsRunes(t *testing.T) {
	s := strings.Repeat("é", report.TextBytesMax) // two bytes each
	c := report.Cut(s)
	if len(c) > report.TextBytesMax || !strings.HasSuffix(c, "…") || !strings.HasPrefix(s, strings.TrimSuffix(c, "…")) {
		t.Errorf("Cut gave %d bytes %q…", len(c), c[:8])
	}
}
