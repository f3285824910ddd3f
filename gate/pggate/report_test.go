// This file proves the dashboard sees the gate inside PostgreSQL: the
// report Source lists a paused resource first with its FENCE_REGRESSION
// alarm, a quarantine with its count, the recent resources next, and a
// resume applied through the Resumer as the resource's last action.
package pggate_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

func TestReportingSource(t *testing.T) {
	ctx := context.Background()
	e := conformance.NewEnv(t, newHarness)
	h := e.H.(*harness)
	apply := func(res string, fence uint64, op string, seq uint64, payload string, iss func() time.Duration) {
		t.Helper()
		m := e.Iss.Later(iss()).Mutation(conformance.W(res, fence, op), seq, payload)
		_, _ = h.Apply(ctx, conformance.Owner, m, payload)
	}
	now := func() time.Duration { return 0 }
	later := func() time.Duration { return time.Second }
	apply("rep/a-ok", 5, "op-a", 1, "a1", now)
	apply("rep/b-quarantine", 5, "op-a", 1, "a1", now)
	apply("rep/b-quarantine", 5, "op-a", 1, "evil", now)
	apply("rep/z-paused", 5, "op-a", 1, "a1", now)
	apply("rep/z-paused", 3, "op-restored", 1, "r1", later) // a regression: paused
	src := pggate.Reporting{DB: h.w.db}
	views, total, err := src.Resources(ctx, []string{"rep/b-quarantine"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(views) != 3 {
		t.Fatalf("total %d, %d views: %+v", total, len(views), views)
	}
	if v := views[0]; v.Resource != "rep/z-paused" || !v.Paused || v.Alarms != 1 || len(v.Recent) != 1 || v.Recent[0].Kind != "FENCE_REGRESSION" {
		t.Fatalf("first view %+v", v)
	}
	if v := views[1]; v.Resource != "rep/b-quarantine" || v.Quarantined != 1 || v.Alarms != 0 {
		t.Fatalf("second view %+v", v)
	}
	if v := views[2]; v.Resource != "rep/a-ok" || v.HighestFence != 5 || v.Alarms+v.Quarantined != 0 {
		t.Fatalf("third view %+v", v)
	}
	// Many records: every count, only the last rows.
	if _, err := h.w.db.Exec(`INSERT INTO fencegate.quarantine (resource, fence, seq, operation_id, payload_digest, grant_digest, original_receipt, reason, at_ms)
  VALUES ('rep/a-ok', 5, 1, 'op-a', '', '', '', 'old', 1);
INSERT INTO fencegate.alarms (resource, kind, fence, highest_fence, grant_digest, detail, at_ms)
  SELECT 'rep/a-ok', 'REGRESSION_SUSPECTED', 4, 5, '', 'close call ' || i, 100 + i FROM generate_series(1, 40) i`); err != nil {
		t.Fatal(err)
	}
	views, _, err = src.Resources(ctx, []string{"rep/a-ok"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v := views[0]; v.Resource != "rep/z-paused" {
		t.Fatalf("the paused resource is not first: %+v", views)
	}
	views, _, err = src.Resources(ctx, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if v := views[1]; v.Resource != "rep/a-ok" || v.Alarms != 40 || v.Quarantined != 1 || len(v.Recent) != report.RecordsPerResourceMax || v.Recent[len(v.Recent)-1].Detail != "close call 40" {
		t.Fatalf("many records: %d alarms, %d quarantined, %d recent (%+v)", v.Alarms, v.Quarantined, len(v.Recent), v.Recent)
	}
	if err := h.w.setClock(ctx, h.cfg.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := src.Resume(ctx, "rep/z-paused", 10, "dashboard:ops", "confirmed"); err != nil {
		t.Fatal(err)
	}
	views, _, err = src.Resources(ctx, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Resource != "rep/a-ok" {
		t.Fatalf("after the resume, the limit of 1 keeps %+v", views)
	}
	views, _, err = src.Resources(ctx, []string{"rep/z-paused"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v := views[0]; v.Resource != "rep/z-paused" || v.Paused || v.Floor != 10 || v.LastAction == nil || v.LastAction.Action != "resume" || v.LastAction.Operator != "dashboard:ops" {
		t.Fatalf("resumed view %+v (action %+v)", v, v.LastAction)
	}
}
