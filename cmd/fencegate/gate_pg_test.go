//go:build unix

// This file proves `fencegate gate status` and `gate resume` work on the
// gate inside PostgreSQL, as processes against a real PostgreSQL: a
// resource paused by a FENCE_REGRESSION shows paused with its alarm, a
// resume whose floor is not above highestFence is refused and changes
// nothing, and one above it lifts the pause, keeps the floor and records
// the operator.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gateadmin"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// pausedInsidePG installs and enrolls the gate inside PostgreSQL on a
// fresh database and pauses resource with a FENCE_REGRESSION (fence 3
// proven HELD after fence 5 was accepted); it returns the DSN.
func pausedInsidePG(t *testing.T, resource string) string {
	dsn := pgtest.NewDatabase(t)
	mustRun(t, "gate", "install", "--db", dsn)
	keyFile := filepath.Join(t.TempDir(), "gate.key")
	mustRun(t, "keys", "gen", "--id", "gate-ops", "--alg", "hmac-sha256", "--out", keyFile)
	mustRun(t, "gate", "enroll", "--db", dsn, "--key", keyFile, "--min-epoch", "1")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var role string
	if err := db.QueryRowContext(ctx, `SELECT current_user`).Scan(&role); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "gate", "enroll", "--db", dsn, "--role", role, "--identity", "worker-a")
	if err := pggate.SetClock(ctx, db, gatetest.T0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	sk, err := grant.LoadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	iss := &gatetest.Issuer{Key: sk, Epoch: 1, Now: gatetest.T0, StatusValidFor: time.Hour}
	noop := func(context.Context, *sql.Tx) error { return nil }
	w := gatetest.Writer{Resource: resource, Owner: "worker-a", Lease: "l-5", OperationID: "op-5", Fence: 5}
	if _, err := pggate.Run(ctx, db, iss.Mutation(w, 1, "p5"), noop); err != nil {
		t.Fatalf("fence 5: %v", err)
	}
	w.Lease, w.OperationID, w.Fence = "l-3", "op-3", 3
	if _, err := pggate.Run(ctx, db, iss.Later(time.Second).Mutation(w, 1, "p3"), noop); !errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("fence 3 proven HELD later: %v, want FENCE_REGRESSION", err)
	}
	return dsn
}

// gateCLI runs `fencegate gate args…` as a process and returns its
// output and exit code.
func gateCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	p := startProc(t, append([]string{"gate"}, args...)...)
	code := p.wait(t, "fencegate gate "+strings.Join(args, " "))
	return p.out.String() + p.err.String(), code
}

func TestGateStatusResumeInsidePostgres(t *testing.T) {
	const res = "ledger/paused"
	dsn := pausedInsidePG(t, res)

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{`CREATE TABLE report (resource TEXT NOT NULL, v TEXT NOT NULL)`,
		`SELECT fencegate.protect('report', 'shadow', 'test')`, `INSERT INTO report VALUES ('ledger/paused', 'direct')`} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	out, code := gateCLI(t, "status", res, "--db", dsn)
	if code != 0 || !strings.Contains(out, "paused:              YES: FENCE_REGRESSION") ||
		!strings.Contains(out, "highestFence:        5") || !strings.Contains(out, "FENCE_REGRESSION fence 3") ||
		!strings.Contains(out, "coverage:            0.00% of protected writes fenced at this gate (gated 0, ungated 1)") ||
		!strings.Contains(out, "protected table      report (shadow, resource resource): 1 ungated") {
		t.Fatalf("status of the paused resource: exit %d\n%s", code, out)
	}

	out, code = gateCLI(t, "resume", res, "--db", dsn, "--operator", "alice", "--floor", "5", "--note", "INC-1")
	if code == 0 || !strings.Contains(out, "not above highestFence 5") {
		t.Fatalf("resume with floor 5 = highestFence: exit %d\n%s", code, out)
	}

	out, code = gateCLI(t, "resume", res, "--db", dsn, "--operator", "alice", "--floor", "6", "--note", "INC-1: floor raised")
	if code != 0 || !strings.Contains(out, "resumed "+res+": floor 6 > highestFence 5") {
		t.Fatalf("resume with floor 6: exit %d\n%s", code, out)
	}

	out, code = gateCLI(t, "status", res, "--db", dsn, "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d\n%s", code, out)
	}
	var st gateadmin.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if st.Paused || st.Floor != 6 || st.FloorAt == "" || st.HighestFence != 5 || len(st.Alarms) != 1 || st.Alarms[0].Kind != "FENCE_REGRESSION" {
		t.Fatalf("after the resume: %+v", st)
	}
	if n := len(st.Actions); n != 1 || st.Actions[0].Action != "resume" || st.Actions[0].Operator != "alice" || !strings.Contains(st.Actions[0].Detail, "INC-1: floor raised") {
		t.Fatalf("recorded actions: %+v (the refused resume must record nothing)", st.Actions)
	}
}

// TestGateStatusRefusesTwoGatesInOneDatabase: a database holding a
// gate/sqlgate gate and the gate inside PostgreSQL is not guessed at.
func TestGateStatusRefusesTwoGatesInOneDatabase(t *testing.T) {
	dsn := pausedInsidePG(t, "ledger/both")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE fencegate_schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if out, code := fencegate(t, "gate", "status", "ledger/both", "--db", dsn); code != 2 || !strings.Contains(out, "holds both") {
		t.Fatalf("exit %d: %s", code, out)
	}
}
