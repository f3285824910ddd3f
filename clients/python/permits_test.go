package python

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/clienttest"
)

// TestPythonPermits runs tests/permits.py against a real registry (over a
// memory store, on the system clock) behind the real HTTP API: the
// Python client's permits (counting semaphores) and PERMITS_MISMATCH.
func TestPythonPermits(t *testing.T) {
	t.Parallel()
	requirePython(t)
	reg, err := clienttest.NewRegistry(clock.System{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const tokA, tokB = "token-a-0123456789abcdef", "token-b-0123456789abcdef"
	auth, err := httpapi.ParseTokenFile([]byte(tokA + " " + clienttest.OwnerA + "\n" + tokB + " " + clienttest.OwnerB + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.NewServer(httpapi.Config{Registry: reg.Registry, Auth: auth, Authorizer: httpapi.AllowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cmd := exec.Command(python, "-m", "unittest", "-v", "tests.permits")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "FENCEGATE_TEST_REGISTRY="+srv.URL,
		"FENCEGATE_TEST_TOKEN_A="+tokA, "FENCEGATE_TEST_TOKEN_B="+tokB)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest tests.permits: %v\n%s", err, out)
	}
	t.Logf("python3 -m unittest tests.permits (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
}
