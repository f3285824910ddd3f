//go:build unix

// The rig the lock's tests share, proving nothing on its own: the real
// fencegate binary built from the repository, `serve --dev` processes on
// free ports (internal/proctest), real PostgreSQL (testkit/pgtest), and
// elector processes — this test binary run again as a client-go
// LeaderElector on a Lock.
package fencedlock

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/integrations/kubernetes/internal/proctest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// envElector, set, makes the test binary an elector process (electorMain).
const envElector = "FENCEDLOCK_TEST_ELECTOR"

var fencegateBin string // built by TestMain

func TestMain(m *testing.M) {
	if os.Getenv(envElector) != "" {
		os.Exit(electorMain())
	}
	dir, err := os.MkdirTemp("", "fencedlock-test-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		fencegateBin, err = proctest.BuildFencegate(dir, filepath.Join("..", "..", "..")) // the repository's root
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return pgtest.Main(m)
	}()
	os.Exit(code)
}

// testBinary is this test binary, which runs as an elector process with
// envElector set.
func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// serveDev starts `fencegate serve --dev` on a free port and returns it
// with its URL.
func serveDev(t *testing.T) (*proctest.Proc, string) {
	t.Helper()
	return proctest.ServeDev(t, fencegateBin)
}
