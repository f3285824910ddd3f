package python

import (
	"bytes"
	"crypto/sha256"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memstore"
)

// pyIdentities are the identities the lock-set and read/write tests run
// as, by the letter their token's variable ends with
// (FENCEGATE_TEST_TOKEN_A, …); ADMIN may break a lock.
var pyIdentities = map[string]string{"A": "worker-py-a", "B": "worker-py-b", "C": "worker-py-c", "ADMIN": "ops-admin"}

// pyEpoch is the issuer epoch the test registry signs under.
const pyEpoch = 3

// pyRegistry serves a real registry (over a memory store, on the system
// clock, signing with an HMAC key a gate inside PostgreSQL can enroll)
// behind the real HTTP API, and returns its URL, the environment that
// names it and a token per identity (pyIdentities), and its key.
func pyRegistry(t *testing.T) (env []string, key *grant.SigningKey) {
	t.Helper()
	secret := sha256.Sum256([]byte("clients/python/pyRegistry"))
	key, err := grant.NewSigningKey(grant.AlgHMACSHA256, "py-reg-1", secret[:])
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(memstore.New(), registry.DefaultConfig(pyEpoch), clock.System{}, key)
	if err != nil {
		t.Fatal(err)
	}
	var tokens bytes.Buffer
	for who, id := range pyIdentities {
		tok := "token-" + strings.ToLower(who) + "-0123456789abcdef"
		tokens.WriteString(tok + " " + id + "\n")
		env = append(env, "FENCEGATE_TEST_TOKEN_"+who+"="+tok)
	}
	auth, err := httpapi.ParseTokenFile(tokens.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.NewServer(httpapi.Config{Registry: reg, Auth: auth, Authorizer: httpapi.AllowAll{}, Admins: httpapi.Admins{"ops-admin"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return append(env, "FENCEGATE_TEST_REGISTRY="+srv.URL), key
}

// runPyModules runs `python3 -m unittest -v module` for each module at
// once (each process its own: they wait on the clock, not the CPU, and
// go test runs only GOMAXPROCS parallel tests) with env, and fails
// unless every test of each ran and passed (none skipped).
func runPyModules(t *testing.T, env []string, modules ...string) {
	t.Helper()
	requirePython(t)
	type result struct {
		out []byte
		err error
		d   time.Duration
	}
	results := make([]chan result, len(modules))
	for i, module := range modules {
		results[i] = make(chan result, 1)
		cmd := exec.Command(python, "-m", "unittest", "-v", module)
		cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), env...)
		go func(c chan<- result) {
			start := time.Now()
			out, err := cmd.CombinedOutput()
			c <- result{out, err, time.Since(start)}
		}(results[i])
	}
	for i, module := range modules {
		r := <-results[i]
		t.Logf("python3 -m unittest %s (%s):\n%s", module, r.d.Round(time.Millisecond), r.out)
		switch s := string(r.out); {
		case r.err != nil:
			t.Errorf("python3 -m unittest %s: %v", module, r.err)
		case !strings.Contains(s, "\nOK") || strings.Contains(s, "skipped"):
			t.Errorf("python3 -m unittest %s: not every test ran and passed", module)
		}
	}
}

// TestPythonLockSetsAndReadWrite runs tests/locksets.py against a real
// registry behind the real HTTP API: crossed-order lock sets in two
// Python processes (no deadlock, never part of a set held), a broken
// member ending the set and its release freeing the rest, a lost set
// answer resent under the same request ID, two readers
// sharing while a writer waits, a downgrade that lets no queued writer
// in; each beside its negative control (a deliberately wrong client path
// the same check catches). Its classes run at once.
func TestPythonLockSetsAndReadWrite(t *testing.T) {
	t.Parallel()
	env, _ := pyRegistry(t)
	runPyModules(t, env, "tests.locksets.CrossedOrder", "tests.locksets.BrokenMember", "tests.locksets.ReadersShare",
		"tests.locksets.Downgrade", "tests.locksets.LostAnswer")
}
