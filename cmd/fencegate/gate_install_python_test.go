//go:build unix

// This file proves the worker side in any language with real processes:
// serve with an HMAC key, the gate installed in a real PostgreSQL with
// that key enrolled, and workers under fencegate lock that are a Python
// program (examples/python, psycopg) and a sh+psql script
// (examples/psql), each writing through fencegate.apply. A Python worker
// frozen with its envelope in hand while its lease is broken and B
// writes has its late write refused as STALE_OWNER, and B's result
// stands; the table is protected, so no write lands outside the gate.
package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

// pyWorld is serve, a database with the gate, and a worker role per
// identity.
type pyWorld struct {
	t        *testing.T
	registry string
	dsn      string
	db       *sql.DB
}

const pyResource = "jobs/report"

// python is Debian's interpreter, where python3-psycopg installs.
const python = "/usr/bin/python3"

func newPyWorld(t *testing.T) *pyWorld {
	t.Helper()
	if err := exec.Command(python, "-c", "import psycopg").Run(); err != nil {
		if os.Getenv("FENCEGATE_REQUIRE_PSYCOPG") == "1" {
			t.Fatalf("python3-psycopg required: %v", err)
		}
		t.Skipf("*** SKIPPING: %s cannot import psycopg (apt-get install python3-psycopg) ***", python)
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	var lines strings.Builder
	for id, tok := range storyTokens {
		fmt.Fprintf(&lines, "%s %s\n", tok, id)
	}
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "gate.key")
	mustRun(t, "keys", "gen", "--id", "gate-report", "--alg", "hmac-sha256", "--out", key)
	serve := startProc(t, "serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--key", key,
		"--token-file", tokens, "--unsafe-no-fsync", "--authz-open", "--admin", "ops-admin")
	w := &pyWorld{t: t, registry: serve.waitOutput(t, listenLine), dsn: pgtest.NewDatabase(t)}
	mustRun(t, "gate", "install", "--db", w.dsn)
	mustRun(t, "gate", "enroll", "--db", w.dsn, "--key", key, "--min-epoch", "1")
	var err error
	if w.db, err = sql.Open("pgx", w.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.db.Close() })
	w.exec(`CREATE TABLE report (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, resource TEXT NOT NULL, value TEXT NOT NULL)`)
	w.exec(`SELECT fencegate.protect('report', 'enforce', 'test')`)
	for _, id := range []string{"worker-a", "worker-b"} {
		role := pyRole(id)
		w.exec(`DO $$ BEGIN CREATE ROLE ` + role + ` LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`)
		w.exec(`GRANT fencegate_writer TO ` + role)
		w.exec(`GRANT INSERT ON report TO ` + role)
		mustRun(t, "gate", "enroll", "--db", w.dsn, "--role", role, "--identity", id)
	}
	return w
}

func pyRole(identity string) string { return "fgpy_" + strings.ReplaceAll(identity, "-", "_") }

func (w *pyWorld) exec(stmt string) {
	w.t.Helper()
	if _, err := w.db.Exec(stmt); err != nil {
		w.t.Fatalf("%s: %v", stmt, err)
	}
}

// worker starts `fencegate lock pyResource -- CHILD` as identity, CHILD
// being the Python worker or, with psql, the sh+psql one.
func (w *pyWorld) worker(identity, value string, psql, hold bool, flags ...string) *proc {
	w.t.Helper()
	child := []string{python, examplePath(w.t, "python/worker.py")}
	if psql {
		child = []string{"sh", examplePath(w.t, "psql/write.sh"), value}
	}
	args := append([]string{"lock", pyResource, "--registry", w.registry, "--token", storyTokens[identity]}, flags...)
	return startProcWith(w.t, func(env []string) []string {
		return append(env, "FENCEGATE_BIN="+os.Args[0], "PG_DSN="+pgtest.WithParam(w.dsn, "user", pyRole(identity)),
			"VALUE="+value, "HOLD="+strconv.FormatBool(hold))
	}, append(append(args, "--"), child...)...)
}

func examplePath(t *testing.T, rel string) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (w *pyWorld) values() []string {
	w.t.Helper()
	rows, err := w.db.Query(`SELECT value FROM report WHERE resource = $1 ORDER BY id`, pyResource)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

var outcomeLine = regexp.MustCompile(`outcome (\S+)`)

func TestPythonAndPsqlWorkersWriteThroughTheGate(t *testing.T) {
	w := newPyWorld(t)
	py := w.worker("worker-a", "100 (python)", false, false)
	if code := py.wait(t, "python worker"); code != 0 || !strings.Contains(py.out.String(), "outcome ACCEPTED") {
		t.Fatalf("python worker exited %d:\n%s%s", code, py.out, py.err)
	}
	sh := w.worker("worker-b", "200 (psql)", true, false)
	if code := sh.wait(t, "psql worker"); code != 0 || !strings.Contains(sh.out.String(), "outcome ACCEPTED") {
		t.Fatalf("psql worker exited %d:\n%s%s", code, sh.out, sh.err)
	}
	if got := w.values(); !slices.Equal(got, []string{"100 (python)", "200 (psql)"}) {
		t.Fatalf("report holds %q", got)
	}
	// The table is protected: the worker's role cannot write it outside
	// an accepting fencegate.apply.
	out, err := exec.Command("psql", "-X", "-q", pgtest.WithParam(w.dsn, "user", pyRole("worker-a")), "-c",
		`INSERT INTO report (resource, value) VALUES ('jobs/report', 'ungated')`).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "outside an accepting fencegate.apply") {
		t.Fatalf("an ungated insert: %v\n%s", err, out)
	}
}

func TestFrozenPythonWorkerIsRefused(t *testing.T) {
	w := newPyWorld(t)
	a := w.worker("worker-a", "100 (by A, before its pause)", false, true, "--ttl", "60s", "--grace", "20s")
	aFence, aChild := childPid(t, a)
	freeze(t, a, aChild, syscall.SIGSTOP)
	brk := startProc(t, "break", pyResource, "--note", "worker A frozen, test", "--registry", w.registry, "--token", storyTokens["ops-admin"])
	if code := brk.wait(t, "break"); code != 0 {
		t.Fatalf("break exited %d:\n%s%s", code, brk.out, brk.err)
	}
	b := w.worker("worker-b", "200 (by B)", false, false, "--ttl", "10s")
	bFence, _ := childPid(t, b)
	if code := b.wait(t, "B"); code != 0 || !strings.Contains(b.out.String(), "outcome ACCEPTED") || bFence <= aFence {
		t.Fatalf("B exited %d at fence %d (A's %d):\n%s%s", code, bFence, aFence, b.out, b.err)
	}
	fmt.Fprintln(a.stdin)
	freeze(t, a, aChild, syscall.SIGCONT)
	a.waitOutput(t, outcomeLine)
	if !strings.Contains(a.out.String(), "outcome STALE_OWNER") {
		t.Fatalf("the frozen worker's late write was not refused as STALE_OWNER:\n%s%s", a.out, a.err)
	}
	if got := w.values(); !slices.Equal(got, []string{"200 (by B)"}) {
		t.Fatalf("report holds %q, want B's result only", got)
	}
}
