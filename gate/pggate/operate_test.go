// This file proves Operated reads every kind of record the gate inside
// PostgreSQL keeps, as gateadmin.RecordingGate promises: an alarm, a
// quarantine entry with its original receipt, a shadow-log entry and an
// operator action, each oldest first, and refuses a kind it has not.
package pggate_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gateadmin"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

var _ gateadmin.RecordingGate = pggate.Operated{}

func TestOperatedRecords(t *testing.T) {
	ctx := context.Background()
	e := conformance.NewEnv(t, newHarness)
	h := e.H.(*harness)
	apply := func(res string, fence uint64, op string, payload string, later time.Duration) {
		t.Helper()
		_, _ = h.Apply(ctx, conformance.Owner, e.Iss.Later(later).Mutation(conformance.W(res, fence, op), 1, payload), payload)
	}
	apply("ops/q", 5, "op-a", "a1", 0)
	apply("ops/q", 5, "op-a", "evil", 0) // quarantined
	apply("ops/p", 5, "op-a", "a1", 0)
	apply("ops/p", 3, "op-b", "b1", time.Second) // FENCE_REGRESSION: paused
	if err := pggate.Resume(ctx, h.w.db, "ops/p", 6, "alice", "INC-1"); err != nil {
		t.Fatal(err)
	}
	if err := pggate.SetMode(ctx, h.w.db, "ops/s", gate.ModeShadow, "alice"); err != nil {
		t.Fatal(err)
	}
	apply("ops/s", 5, "op-a", "a1", 0)
	apply("ops/s", 4, "op-c", "c1", 0) // stale, let through in shadow mode
	o := pggate.Operated{DB: h.w.db}
	check := func(kind, res string, want int, ok func(stored.Record) bool) {
		t.Helper()
		rs, err := o.Records(ctx, kind, res)
		if err != nil || len(rs) != want {
			t.Fatalf("%s of %s: %d records (%v), want %d: %+v", kind, res, len(rs), err, want, rs)
		}
		for _, r := range rs {
			if r.Kind != kind || r.Resource != res || !ok(r) {
				t.Fatalf("%s of %s: %+v", kind, res, r)
			}
		}
	}
	check(stored.RecordQuarantine, "ops/q", 1, func(r stored.Record) bool { return r.FenceToken == 5 && r.Original != "" && r.PayloadDigest != "" })
	check(stored.RecordAlarm, "ops/p", 1, func(r stored.Record) bool {
		return r.AlarmKind == string(gate.AlarmRegression) && r.FenceToken == 3 && r.HighestFence == 5
	})
	check(stored.RecordAction, "ops/p", 1, func(r stored.Record) bool { return r.Outcome == "resume" && r.Operator == "alice" })
	check(stored.RecordShadow, "ops/s", 1, func(r stored.Record) bool { return r.Outcome == string(gate.StaleOwner) && r.FenceToken == 4 })
	check(stored.RecordAlarm, "ops/never", 0, nil)
	if _, err := o.Records(ctx, "receipt", "ops/q"); err == nil {
		t.Fatal("an unknown kind was read")
	}
	st, err := o.State(ctx, "ops/p")
	if err != nil || st.Paused || st.Floor != 6 {
		t.Fatalf("state after the resume: %+v, %v", st, err)
	}
}
