//go:build unix

// This file proves the worker side in any language with real processes:
// serve with an HMAC key, the gate installed in a real PostgreSQL with
// that key enrolled, and workers that are a Python program on the Python
// client (examples/python: clients/python and psycopg) and a sh+psql
// script under fencegate lock (examples/psql), each writing through
// fencegate.apply. A Python worker frozen with its envelope in hand
// while its lease is broken and B writes has its late write refused as
// STALE_OWNER, and B's result stands: its client could not know of the
// break, the gate does; the table is protected, so no write lands
// outside the gate.
package main

import (
	"bytes"
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
	"time"

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

// worker starts the Python worker (examples/python, on the client in
// clients/python) as identity with a lease of ttl, or, with psql,
// `fencegate lock pyResource -- sh write.sh VALUE` (examples/psql).
func (w *pyWorld) worker(identity, value string, psql bool, ttl string) *proc {
	w.t.Helper()
	env := []string{"PG_DSN=" + pgtest.WithParam(w.dsn, "user", pyRole(identity)), "VALUE=" + value}
	if psql {
		args := []string{"lock", pyResource, "--registry", w.registry, "--token", storyTokens[identity], "--ttl", ttl,
			"--", "sh", examplePath(w.t, "psql/write.sh"), value}
		return startProcWith(w.t, func(e []string) []string { return append(e, append(env, "FENCEGATE_BIN="+os.Args[0])...) }, args...)
	}
	env = append(env, "PYTHONPATH="+pythonClient(w.t), "FENCEGATE_REGISTRY="+w.registry,
		"FENCEGATE_TOKEN="+storyTokens[identity], "RESOURCE="+pyResource, "TTL="+ttl, "PYTHONDONTWRITEBYTECODE=1")
	return startExec(w.t, python, func(e []string) []string { return append(e, env...) }, examplePath(w.t, "python/worker.py"))
}

// pythonClient is the Python client's folder (clients/python).
func pythonClient(t *testing.T) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// frozenWorker starts the Python client's story worker
// (clients/python/tests/pyworker.py) as identity with FREEZE=1: it takes
// the lease, builds its envelope and stops itself (SIGSTOP) before
// sending it. It returns once the worker is stopped, with its fence.
func (w *pyWorld) frozenWorker(identity, value, ttl string) (*proc, uint64) {
	w.t.Helper()
	env := []string{"PG_DSN=" + pgtest.WithParam(w.dsn, "user", pyRole(identity)), "VALUE=" + value,
		"PYTHONPATH=" + pythonClient(w.t), "FENCEGATE_URL=" + w.registry, "FENCEGATE_TOKEN=" + storyTokens[identity],
		"RESOURCE=" + pyResource, "TTL=" + ttl, "FREEZE=1", "PYTHONDONTWRITEBYTECODE=1"}
	p := startExec(w.t, python, func(e []string) []string { return append(e, env...) },
		filepath.Join(pythonClient(w.t), "tests", "pyworker.py"))
	fence, err := strconv.ParseUint(p.waitOutput(w.t, frozenLine), 10, 64)
	if err != nil {
		w.t.Fatal(err)
	}
	for deadline := time.Now().Add(procWaitMax); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err == nil && strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[0] == "T" {
			return p, fence
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the worker did not stop itself: %v\n%s%s", err, p.out, p.err)
		}
	}
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

var (
	outcomeLine = regexp.MustCompile(`outcome (\S+)`)
	leaseLine   = regexp.MustCompile(`lease fence=(\d+)`)
	frozenLine  = regexp.MustCompile(`frozen fence=(\d+) pid=\d+`)
)

// leaseFence waits for the Python worker to report its lease's fence.
func leaseFence(t *testing.T, p *proc) uint64 {
	t.Helper()
	f, err := strconv.ParseUint(p.waitOutput(t, leaseLine), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPythonAndPsqlWorkersWriteThroughTheGate(t *testing.T) {
	w := newPyWorld(t)
	py := w.worker("worker-a", "100 (python)", false, "10")
	if code := py.wait(t, "python worker"); code != 0 || !strings.Contains(py.out.String(), "outcome ACCEPTED") {
		t.Fatalf("python worker exited %d:\n%s%s", code, py.out, py.err)
	}
	sh := w.worker("worker-b", "200 (psql)", true, "10s")
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
	a, aFence := w.frozenWorker("worker-a", "100 (by A, after its pause)", "60")
	brk := startProc(t, "break", pyResource, "--note", "worker A frozen, test", "--registry", w.registry, "--token", storyTokens["ops-admin"])
	if code := brk.wait(t, "break"); code != 0 {
		t.Fatalf("break exited %d:\n%s%s", code, brk.out, brk.err)
	}
	b := w.worker("worker-b", "200 (by B)", false, "10")
	bFence := leaseFence(t, b)
	if code := b.wait(t, "B"); code != 0 || !strings.Contains(b.out.String(), "outcome ACCEPTED") || bFence <= aFence {
		t.Fatalf("B exited %d at fence %d (A's %d):\n%s%s", code, bFence, aFence, b.out, b.err)
	}
	if err := syscall.Kill(-a.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	a.waitOutput(t, outcomeLine)
	if !strings.Contains(a.out.String(), "outcome STALE_OWNER") {
		t.Fatalf("the frozen worker's late write was not refused as STALE_OWNER:\n%s%s", a.out, a.err)
	}
	if got := w.values(); !slices.Equal(got, []string{"200 (by B)"}) {
		t.Fatalf("report holds %q, want B's result only", got)
	}
}
