// Proves the gate's state gauges: a FENCE_REGRESSION makes
// fencegate_gate_paused_resources 1 with the pause's age, a resume brings
// it back to 0; and the UNKNOWN tracker opens an operation on its first
// UNDETERMINED answer, ages it, and closes it on ACCEPTED or
// PROVEN_ABSENT.
package gatemetrics_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatemetrics"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestPausedResourcesGauge(t *testing.T) {
	ctx := context.Background()
	db, err := sqlgate.OpenSQLite(filepath.Join(t.TempDir(), "g.db"), "FULL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	iss := gatetest.NewIssuer("metrics")
	clk := fakeclock.New(gatetest.T0.Add(2 * time.Second))
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(gatemetrics.NewStateCollector(func(ctx context.Context) (int, int64, error) { return g.Paused(ctx, db) }, clk.Now, nil))
	gauge := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	if gauge("fencegate_gate_paused_resources") != 0 || gauge("fencegate_gate_state_up") != 1 {
		t.Fatal("a fresh gate reports a pause")
	}
	w := func(fence uint64, op string) gatetest.Writer {
		return gatetest.Writer{Resource: "m/one", Owner: "w", Lease: "l-" + op, OperationID: op, Fence: fence}
	}
	noop := func(context.Context, *sql.Tx) error { return nil }
	if _, err := g.Run(ctx, db, "w", iss.Mutation(w(5, "a"), 1, "p"), noop); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, db, "w", iss.Later(time.Second).Mutation(w(3, "b"), 1, "p"), noop); !errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("want FENCE_REGRESSION: %v", err)
	}
	clk.Advance(90 * time.Second)
	if n, age := gauge("fencegate_gate_paused_resources"), gauge("fencegate_gate_paused_oldest_age_seconds"); n != 1 || age != 90 {
		t.Fatalf("after the regression: paused %v, age %v s; want 1 and 90", n, age)
	}
	if err := g.Resume(ctx, db, "m/one", 6, "ops", "test"); err != nil {
		t.Fatal(err)
	}
	if n, age := gauge("fencegate_gate_paused_resources"), gauge("fencegate_gate_paused_oldest_age_seconds"); n != 0 || age != 0 {
		t.Fatalf("after resume: paused %v, age %v", n, age)
	}
}

func TestUnknownTracker(t *testing.T) {
	clk := fakeclock.New(gatetest.T0)
	u := gatemetrics.NewUnknownTracker(clk.Now)
	u.Observe("r", "op-1", gate.VerdictUndetermined)
	clk.Advance(time.Minute)
	u.Observe("r", "op-1", gate.VerdictUndetermined) // a second query keeps the first instant
	u.Observe("r", "op-2", gate.VerdictUndetermined)
	u.Observe("r", "op-3", gate.VerdictAccepted) // never open
	clk.Advance(14 * time.Minute)
	if n, age := u.Open(); n != 2 || age != 15*time.Minute {
		t.Fatalf("open %d, oldest %s; want 2 and 15m", n, age)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(u.Collectors(nil)...)
	if v := testutil.ToFloat64(u.Collectors(nil)[1]); v != 900 {
		t.Fatalf("oldest age gauge %v, want 900", v)
	}
	u.Observe("r", "op-1", gate.VerdictAccepted)
	u.Observe("r", "op-2", gate.VerdictProvenAbsent)
	if n, age := u.Open(); n != 0 || age != 0 {
		t.Fatalf("after answers: open %d, oldest %s", n, age)
	}
}
