// Finds out which regression rule the gate on this branch runs, so the
// suite knows whether a pause without a restore is a defect (the new
// rule) or the old rule's known false alarm.
package chaos

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// oldRegressionRule replays docs/rule.md's motivating case on a real gate
// (SQLite): A's grant (fence 1) and a HELD proof issued at T0; B's grant
// (fence 2) issued and accepted 3 s later; then A's late write with its
// still-fresh proof. The old rule calls that FENCE_REGRESSION and pauses;
// the new one sees a proof issued before B's grant and says STALE_OWNER.
func oldRegressionRule(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	iss := gatetest.NewIssuer("chaos-rule-probe")
	clock := fakeclock.New(gatetest.T0)
	db, err := sqlgate.OpenSQLite(filepath.Join(t.TempDir(), "probe.db"), "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *sql.Tx) error { return nil }
	a := iss.Mutation(gatetest.Writer{Resource: "probe/r", Owner: "worker-a", Lease: "lease-a", OperationID: "op-a", Fence: 1}, 1, "a")
	iss.Now = gatetest.T0.Add(3 * time.Second)
	clock.Advance(3 * time.Second)
	b := iss.Mutation(gatetest.Writer{Resource: "probe/r", Owner: "worker-b", Lease: "lease-b", OperationID: "op-b", Fence: 2}, 1, "b")
	if _, err := g.Run(ctx, db, "worker-b", b, noop); err != nil {
		t.Fatalf("rule probe: B's write: %v", err)
	}
	clock.Advance(100 * time.Millisecond)
	_, err = g.Run(ctx, db, "worker-a", a, noop)
	switch o := gate.OutcomeOf(err); o {
	case gate.FenceRegression:
		return true
	case gate.StaleOwner:
		return false
	default:
		t.Fatalf("rule probe: A's late write: %s (%v)", o, err)
		return false
	}
}
