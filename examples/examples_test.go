// Runs the examples as a user runs them: each is built from this module
// (a module of its own, as a user's program is, with a replace to the
// repository) and run as a process against a real `fencegate serve --dev`
// on 127.0.0.1:7420 and real databases (SQLite files, and PostgreSQL
// started with initdb and pg_ctl). Each test checks what the program left
// behind: the rows it wrote, and the order in which the lockers and
// leaders ran.
package examples_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

// registryAddr is where the examples look for the registry (serve --dev's
// default listen address).
const registryAddr = "127.0.0.1:7420"

var bins string // the built examples and fencegate

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fencegate-examples-")
	if err != nil {
		panic(err)
	}
	bins = dir
	code := func() int {
		defer os.RemoveAll(dir)
		for _, b := range []struct{ dir, pkg string }{{".", "./..."}, {"..", "./cmd/fencegate"}} { // fencegate from its own module
			build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), b.pkg)
			build.Dir = b.dir
			if out, err := build.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b.pkg, err, out)
				return 1
			}
		}
		if c, err := net.DialTimeout("tcp", registryAddr, time.Second); err == nil {
			c.Close()
			fmt.Fprintf(os.Stderr, "%s is taken: the examples talk to a registry there; stop whatever listens on it\n", registryAddr)
			return 1
		}
		serve := exec.Command(filepath.Join(dir, "fencegate"), "serve", "--dev", "--data-dir", filepath.Join(dir, "registry"), "--request-log=false")
		var logs bytes.Buffer
		serve.Stdout, serve.Stderr = &logs, &logs
		if err := serve.Start(); err != nil {
			panic(err)
		}
		defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
		if !waitListening(registryAddr, 60*time.Second) {
			fmt.Fprintf(os.Stderr, "serve --dev never listened on %s:\n%s", registryAddr, logs.String())
			return 1
		}
		return pgtest.Main(m) // stops the PostgreSQL cluster a test started
	}()
	os.Exit(code)
}

func waitListening(addr string, max time.Duration) bool {
	for deadline := time.Now().Add(max); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
	}
	return false
}

// run runs example name in dir with env added, and returns its output.
func run(t *testing.T, dir, name string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, name), args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	return string(out)
}

// total reads the one row an example writes.
func total(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT total FROM totals WHERE day = '2026-07-19'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOwnDatabaseSQLite(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, "owndb", nil)
	run(t, dir, "owndb", nil) // a second lease, a higher fence, the same row
	db, err := sql.Open("sqlite", filepath.Join(dir, "totals.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := total(t, db); n != 200 {
		t.Fatalf("totals holds %d, want 200", n)
	}
	var receipts int
	if err := db.QueryRow("SELECT count(*) FROM fencegate_receipts").Scan(&receipts); err != nil || receipts != 2 {
		t.Fatalf("%d receipts (%v), want one per run", receipts, err)
	}
}

func TestOwnDatabasePgx(t *testing.T) {
	url := pgtest.NewDatabase(t)
	run(t, t.TempDir(), "owndbpgx", []string{"DATABASE_URL=" + url})
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := total(t, db); n != 300 {
		t.Fatalf("totals holds %d, want 300", n)
	}
}

var stamp = regexp.MustCompile(`(start|leading|done|resigning) (?:fence|term)=(\d+) at=(\d+)`)

// spans parses each run's start and end instants and fence, in start order.
func spans(t *testing.T, outs []string) [][3]int64 {
	t.Helper()
	var out [][3]int64
	for _, o := range outs {
		m := stamp.FindAllStringSubmatch(o, -1)
		if len(m) != 2 {
			t.Fatalf("want a start and an end line:\n%s", o)
		}
		f, _ := strconv.ParseInt(m[0][2], 10, 64)
		a, _ := strconv.ParseInt(m[0][3], 10, 64)
		b, _ := strconv.ParseInt(m[1][3], 10, 64)
		out = append(out, [3]int64{a, b, f})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// runTogether runs n copies of example name at once.
func runTogether(t *testing.T, name string, n int) []string {
	t.Helper()
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i] = run(t, t.TempDir(), name, nil) }()
	}
	wg.Wait()
	return outs
}

func TestLockOnlyRunsOneAtATime(t *testing.T) {
	s := spans(t, runTogether(t, "lockonly", 3))
	for i := 1; i < len(s); i++ {
		if s[i][0] < s[i-1][1] || s[i][2] <= s[i-1][2] {
			t.Fatalf("run %d started at %d (fence %d) before run %d ended at %d (fence %d)", i, s[i][0], s[i][2], i-1, s[i-1][1], s[i-1][2])
		}
	}
}

func TestElectionTermsDoNotOverlap(t *testing.T) {
	outs := runTogether(t, "election", 2)
	s := spans(t, outs)
	if s[1][0] < s[0][1] || s[1][2] <= s[0][2] {
		t.Fatalf("the second leader (term %d) led from %d, before the first (term %d) resigned at %d", s[1][2], s[1][0], s[0][2], s[0][1])
	}
	for _, o := range outs {
		if !strings.Contains(o, "leader dev term=") {
			t.Fatalf("Leader did not name the leader:\n%s", o)
		}
	}
}

func TestRemoteWorkerWritesThroughTheServicesGate(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := exec.CommandContext(ctx, filepath.Join(bins, "service"))
	svc.Dir = dir
	var logs bytes.Buffer
	svc.Stdout, svc.Stderr = &logs, &logs
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = svc.Wait() }()
	if !waitListening("127.0.0.1:8091", 30*time.Second) {
		t.Fatalf("the service never listened:\n%s", logs.String())
	}
	for _, v := range []string{"400", "410"} {
		if out := run(t, dir, "worker", nil, v); !strings.Contains(out, "wrote total="+v) {
			t.Fatalf("worker %s:\n%s", v, out)
		}
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "service.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := total(t, db); n != 410 {
		t.Fatalf("the service's totals hold %d, want 410", n)
	}
}
