package python

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// readGrantRole is the database role the Python worker writes as, mapped
// to identity A (pyIdentities): the owner of its grants.
const readGrantRole = "fgpy_readgrant_a"

// TestPythonReadGrantAtPostgres runs tests/readgrant.py: a reader's
// lease taken from a real registry (over HTTP) and written through the
// gate inside a real PostgreSQL with fencegate.pg.apply is refused
// ReadGrant (READ_GRANT, SQLSTATE FG015) with nothing written, while the
// writer's lease on the same lock is accepted; its negative control, the
// gate's reader check cut out, lets the same reader's write land. It
// fails, not skips, under FENCEGATE_REQUIRE_PG and
// FENCEGATE_REQUIRE_PSYCOPG.
func TestPythonReadGrantAtPostgres(t *testing.T) {
	t.Parallel()
	requirePython(t)
	if err := exec.Command(python, "-c", "import psycopg").Run(); err != nil {
		if os.Getenv("FENCEGATE_REQUIRE_PSYCOPG") == "1" {
			t.Fatalf("python3-psycopg required: %v", err)
		}
		t.Skipf("*** SKIPPING: %s cannot import psycopg (apt-get install python3-psycopg) ***", python)
	}
	env, key := pyRegistry(t)
	dsn := pgtest.NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := pggate.Install(ctx, db); err != nil {
		t.Fatal(err)
	}
	k, err := pggate.KeyOf(key, 1, 0, grant.KeyActive)
	if err != nil {
		t.Fatal(err)
	}
	if err := pggate.SetKey(ctx, db, k); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE TABLE report (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, resource TEXT NOT NULL, value TEXT NOT NULL)`,
		`DO $$ BEGIN CREATE ROLE ` + readGrantRole + ` LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
		`GRANT fencegate_writer TO ` + readGrantRole,
		`GRANT INSERT ON report TO ` + readGrantRole,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := pggate.Protect(ctx, db, "report", gate.ModeEnforce, "test"); err != nil {
		t.Fatal(err)
	}
	if err := pggate.MapCaller(ctx, db, readGrantRole, pyIdentities["A"]); err != nil {
		t.Fatal(err)
	}
	runPyModules(t, append(env, "FENCEGATE_TEST_DSN_ADMIN="+dsn,
		"FENCEGATE_TEST_DSN_A="+pgtest.WithParam(dsn, "user", readGrantRole)), "tests.readgrant")
}
