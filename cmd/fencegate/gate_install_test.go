// This file proves fencegate gate install and enroll set up a working
// gate inside PostgreSQL: installing twice is one install, and an HMAC
// key and a caller enrolled from the command line let that caller's
// genuine write through fencegate.apply while a forged one is refused.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestGateInstallAndEnroll(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	version := fmt.Sprint(pggate.SchemaVersion())
	if out := mustRun(t, "gate", "install", "--db", dsn); !strings.Contains(out, "installed schema version "+version) {
		t.Fatalf("install: %s", out)
	}
	if out := mustRun(t, "gate", "install", "--db", dsn); !strings.Contains(out, "already at schema version "+version) {
		t.Fatalf("second install: %s", out)
	}
	keyFile := filepath.Join(t.TempDir(), "gate.key")
	mustRun(t, "keys", "gen", "--id", "gate-ledger", "--alg", "hmac-sha256", "--out", keyFile)
	mustRun(t, "gate", "enroll", "--db", dsn, "--key", keyFile, "--min-epoch", "1")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `DO $$ BEGIN CREATE ROLE fgcli_worker NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `GRANT fencegate_writer TO fgcli_worker`); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "gate", "enroll", "--db", dsn, "--role", "fgcli_worker", "--identity", "worker-a")

	sk, err := grant.LoadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	iss := &gatetest.Issuer{Key: sk, Epoch: 1, Now: gatetest.T0, StatusValidFor: time.Hour}
	w := gatetest.Writer{Resource: "ledger/1", Owner: "worker-a", Lease: "l-1", OperationID: "op-1", Fence: 3}
	if err := pggate.SetClock(ctx, db, gatetest.T0); err != nil {
		t.Fatal(err)
	}
	asWorker := func(ctx context.Context) (*sql.Tx, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err == nil {
			_, err = tx.ExecContext(ctx, `SET LOCAL SESSION AUTHORIZATION fgcli_worker`)
		}
		return tx, err
	}
	noop := func(context.Context, *sql.Tx) error { return nil }
	if _, err := pggate.RunIn(ctx, db, asWorker, iss.Mutation(w, 1, "p1"), noop); err != nil {
		t.Fatalf("genuine write under the enrolled key: %v", err)
	}
	forged := gatetest.NewIssuer("forger").Mutation(w, 2, "p2")
	if _, err := pggate.RunIn(ctx, db, asWorker, forged, noop); !errors.Is(err, gate.ErrBadProof) {
		t.Fatalf("forged write: %v", err)
	}
}

func TestGateInstallNeedsPostgres(t *testing.T) {
	if out, code := fencegate(t, "gate", "install", "--db", "ledger.db"); code != 2 || !strings.Contains(out, "PostgreSQL") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// TestGateInstallPrintRunsInPsql installs with psql alone, from the
// printed script, on a database whose pgcrypto a DBA created.
func TestGateInstallPrintRunsInPsql(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	if out, err := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", dsn, "-c", "CREATE EXTENSION pgcrypto").CombinedOutput(); err != nil {
		t.Fatalf("create extension: %v\n%s", err, out)
	}
	script := mustRun(t, "gate", "install", "--print")
	cmd := exec.Command("psql", "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1", dsn)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql -1 < script: %v\n%s", err, out)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := pggate.Version(context.Background(), db); err != nil || v != pggate.SchemaVersion() {
		t.Fatalf("after psql: version %d, %v", v, err)
	}
	if out := mustRun(t, "gate", "install", "--db", dsn); !strings.Contains(out, "already at") {
		t.Fatalf("install after psql: %s", out)
	}
}
