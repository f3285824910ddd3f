//go:build unix

// Proves the Python client (clients/python) with real processes: serve
// signing with an HMAC key, the gate inside a real PostgreSQL, and
// Python workers of their own (clients/python/tests/realprocess.py): a
// worker frozen past its TTL with its envelope built has its thawed
// write refused as STALE_OWNER while the next owner's row stands; a lost
// acquire answer is asked for by the same request ID; the shortest TTL
// renews and holds past its TTL; cut off from the registry, a lease of
// the shortest TTL has lost set at every reading from its local deadline
// on, before the next owner is granted; every SQLSTATE the gate raises is
// its exception class; an election hands over with a higher term. It
// fails, not skips, under FENCEGATE_REQUIRE_PSYCOPG and
// FENCEGATE_REQUIRE_PG.
package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestPythonClientRealProcesses(t *testing.T) {
	// Not in parallel with the package's other tests (some build the
	// binary): the client's shortest-TTL case renews a 2 s lease, which a
	// saturated machine could let lapse.
	w := newPyWorld(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "unittest", "-v", "tests.realprocess")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"FENCEGATE_TEST_REGISTRY="+w.registry,
		"FENCEGATE_TEST_TOKEN_A="+storyTokens["worker-a"], "FENCEGATE_TEST_TOKEN_B="+storyTokens["worker-b"],
		"FENCEGATE_TEST_DSN_A="+pgtest.WithParam(w.dsn, "user", pyRole("worker-a")),
		"FENCEGATE_TEST_DSN_B="+pgtest.WithParam(w.dsn, "user", pyRole("worker-b")),
		"FENCEGATE_TEST_DSN_ADMIN="+w.dsn, "PYTHONDONTWRITEBYTECODE=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest tests.realprocess (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("the Python client's real-process tests failed: %v", err)
	}
	if s := string(out); !strings.Contains(s, "\nOK") || strings.Contains(s, "skipped") {
		t.Fatal("the Python client's real-process tests did not all run and pass")
	}
}
