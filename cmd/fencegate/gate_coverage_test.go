// Proves `fencegate gate status` shows the coverage count, as a real
// process on a SQLite gate/sqlgate database: the resource's gated rows,
// the gate's share of protected writes fenced with the ungated count,
// and each protected table; the same in --json.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gateadmin"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestGateStatusShowsCoverage(t *testing.T) {
	const res = "ledger/covered"
	path := filepath.Join(t.TempDir(), "gate.db")
	db, err := sqlgate.OpenSQLite(path, "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, iss := context.Background(), gatetest.NewIssuer("main")
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: fakeclock.New(iss.Now.Add(time.Second))})
	if err == nil {
		err = g.Migrate(ctx, db)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`CREATE TABLE ledger (resource TEXT NOT NULL, v TEXT NOT NULL)`} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Protect(ctx, db, "ledger", gate.ModeShadow, "ops"); err != nil {
		t.Fatal(err)
	}
	w := gatetest.Writer{Resource: res, Owner: "worker-a", Lease: "l-1", OperationID: "op-1", Fence: 1}
	_, err = g.Run(ctx, db, "worker-a", iss.Mutation(w, 1, "p"), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO ledger VALUES (?, 'gated')`, res)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO ledger VALUES (?, 'direct')`, res); err != nil {
		t.Fatal(err)
	}
	out, code := gateCLI(t, "status", res, "--db", path)
	for _, want := range []string{"gated writes:        1 ", "coverage:            50.00% of protected writes fenced at this gate (gated 1, ungated 1)",
		"protected table      ledger (shadow, resource resource): 1 ungated"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("status lacks %q: exit %d\n%s", want, code, out)
		}
	}
	out, code = gateCLI(t, "status", res, "--db", path, "--json")
	var st gateadmin.Status
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s", code, err, out)
	}
	if c := st.Coverage; c == nil || c.ResourceGated != 1 || c.Gated != 1 || c.Ungated != 1 || len(c.Tables) != 1 || c.Tables[0].Table != "ledger" {
		t.Fatalf("status --json coverage: %+v", c)
	}
}
