//go:build unix

// This file proves a key per gate with real processes: serve signing in
// Ed25519 with --gate-keys (written by fencegate gate enroll
// --registry-keys), one PostgreSQL database enrolled with ONLY its own
// gate key, another enrolled with another gate's key. A Python worker
// on the Python client (examples/python) writes to its database through
// fencegate.apply, carrying its gate's pair from the registry's answer,
// accepted; then one envelope, taken once under fencegate lock by a
// sh+psql worker, is rejected by the other gate's database as BAD_PROOF
// (SQLSTATE FG002) after its own accepted it. The negative control runs the
// same envelope into a database enrolled with the registry's proofs
// alone (no gate key): refused too, so the acceptance is the gate key's.
package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

// gateKeyWorld is serve with two enrolled gates and a database for each.
type gateKeyWorld struct {
	*pyWorld
	dir   string
	other string // DSN of the database enrolled with the other gate's key
}

func newGateKeyWorld(t *testing.T) *gateKeyWorld {
	t.Helper()
	requirePsycopg(t)
	dir := t.TempDir()
	tokens := writeTokens(t, dir)
	keys := filepath.Join(dir, "gate-keys.json")
	for _, g := range []struct{ id, gate, res string }{{"gate-report-1", "report-db", "jobs/*"}, {"gate-other-1", "other-db", "other/*"}} {
		key := filepath.Join(dir, g.id+".key")
		mustRun(t, "keys", "gen", "--id", g.id, "--alg", "hmac-sha256", "--out", key)
		mustRun(t, "gate", "enroll", "--key", key, "--registry-keys", keys, "--gate-name", g.gate, "--resources", g.res)
	}
	serve := startProc(t, "serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--gate-keys", keys,
		"--token-file", tokens, "--unsafe-no-fsync", "--authz-open", "--admin", "ops-admin",
		"--status-proof-ttl-ms", "5000") // three psql runs on one proof, on a loaded machine
	w := &gateKeyWorld{pyWorld: &pyWorld{t: t, registry: serve.waitOutput(t, listenLine)}, dir: dir}
	// serve logs the keys it loaded beside its listen line, not before it.
	for deadline := time.Now().Add(procWaitMax); !strings.Contains(serve.err.String(), `msg="gate keys loaded"`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve does not say it loaded the gate keys:\n%s", serve.err.String())
		}
	}
	w.dsn = w.database(filepath.Join(dir, "gate-report-1.key"))
	w.other = w.database(filepath.Join(dir, "gate-other-1.key"))
	var err error
	if w.db, err = sql.Open("pgx", w.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.db.Close() })
	return w
}

// database installs the gate in a fresh database, enrolls key (none when
// ""), and gives worker-a's role the report table.
func (w *gateKeyWorld) database(key string) string {
	t := w.t
	dsn := pgtest.NewDatabase(t)
	mustRun(t, "gate", "install", "--db", dsn)
	if key != "" {
		mustRun(t, "gate", "enroll", "--db", dsn, "--key", key, "--min-epoch", "1")
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	role := pyRole("worker-a")
	for _, s := range []string{
		`CREATE TABLE report (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, resource TEXT NOT NULL, value TEXT NOT NULL)`,
		`DO $$ BEGIN CREATE ROLE ` + role + ` LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
		`GRANT fencegate_writer TO ` + role, `GRANT INSERT ON report TO ` + role,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	mustRun(t, "gate", "enroll", "--db", dsn, "--role", role, "--identity", "worker-a")
	return dsn
}

// crossScript takes one envelope and writes it to each database of
// $PG_1, $PG_2 and $PG_3 in turn, printing "db N outcome CODE sqlstate STATE".
const crossScript = `set -u
d=sha256:$(printf '%s' "$VALUE" | sha256sum | cut -d' ' -f1)
env=$("$FENCEGATE_BIN" envelope --seq 1 --payload-digest "$d") || exit 3
printf '%s' "$env" > "$ENVELOPE_OUT"
n=0
for db in "$PG_1" "$PG_2" "$PG_3"; do
  n=$((n+1))
  if err=$(psql -X -q -v ON_ERROR_STOP=1 -v envelope="$env" -v digest="$d" -v value="$VALUE" "$db" 2>&1 >/dev/null <<'SQL'
\set VERBOSITY verbose
BEGIN;
SELECT fencegate.apply(:'envelope', :'digest');
INSERT INTO report (resource, value) VALUES ('jobs/report', :'value');
COMMIT;
SQL
  ); then
    echo "db $n outcome ACCEPTED"
  else
    echo "db $n outcome $(printf '%s\n' "$err" | sed -n 's/.*fencegate: \([A-Z_]*\):.*/\1/p' | head -n 1) sqlstate $(printf '%s\n' "$err" | sed -n 's/^ERROR: *\(FG[0-9]*\):.*/\1/p' | head -n 1)"
  fi
done
"$FENCEGATE_BIN" envelope settle --seq 1 --outcome ACCEPTED >/dev/null 2>&1
`

func TestPerGateKeyThroughServeAndPostgreSQL(t *testing.T) {
	w := newGateKeyWorld(t)
	py := w.worker("worker-a", "100 (python)", false, "10")
	if code := py.wait(t, "python worker"); code != 0 || !strings.Contains(py.out.String(), "outcome ACCEPTED") {
		t.Fatalf("python worker, its gate's own key: exited %d:\n%s%s", code, py.out, py.err)
	}

	bare := w.database("") // negative control: the registry's proofs only
	script := filepath.Join(w.dir, "cross.sh")
	if err := os.WriteFile(script, []byte(crossScript), 0o600); err != nil {
		t.Fatal(err)
	}
	envOut := filepath.Join(w.dir, "envelope.json")
	dsnOf := func(dsn string) string { return pgtest.WithParam(dsn, "user", pyRole("worker-a")) }
	sh := startProcWith(t, func(env []string) []string {
		return append(env, "FENCEGATE_BIN="+os.Args[0], "VALUE=200 (psql)", "ENVELOPE_OUT="+envOut,
			"PG_1="+dsnOf(w.dsn), "PG_2="+dsnOf(w.other), "PG_3="+dsnOf(bare))
	}, "lock", pyResource, "--registry", w.registry, "--token", storyTokens["worker-a"], "--", "sh", script)
	if code := sh.wait(t, "psql worker"); code != 0 {
		t.Fatalf("psql worker exited %d:\n%s%s", code, sh.out, sh.err)
	}
	out := sh.out.String()
	for _, want := range []string{"db 1 outcome ACCEPTED", "db 2 outcome BAD_PROOF sqlstate FG002", "db 3 outcome BAD_PROOF sqlstate FG002"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q:\n%s%s", want, out, sh.err)
		}
	}
	env, err := os.ReadFile(envOut)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), `"grantProof":"sig:`) || !strings.Contains(string(env), `"gateProofs":[{"gate":"report-db","grantProof":"mac:gate-report-1:`) ||
		strings.Contains(string(env), "other-db") {
		t.Errorf("the envelope carries the registry's Ed25519 proof and report-db's pair only:\n%s", env)
	}
	if got := w.values(); !slices.Equal(got, []string{"100 (python)", "200 (psql)"}) {
		t.Fatalf("report holds %q", got)
	}
}

// requirePsycopg skips (or, with FENCEGATE_REQUIRE_PSYCOPG=1, fails)
// unless Debian's python3 imports psycopg, as newPyWorld does.
func requirePsycopg(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import psycopg").Run(); err != nil {
		if os.Getenv("FENCEGATE_REQUIRE_PSYCOPG") == "1" {
			t.Fatalf("python3-psycopg required: %v", err)
		}
		t.Skipf("*** SKIPPING: %s cannot import psycopg (apt-get install python3-psycopg) ***", python)
	}
}

// writeTokens writes the story's token file into dir.
func writeTokens(t *testing.T, dir string) string {
	t.Helper()
	var lines strings.Builder
	for id, tok := range storyTokens {
		fmt.Fprintf(&lines, "%s %s\n", tok, id)
	}
	p := filepath.Join(dir, "tokens")
	if err := os.WriteFile(p, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
