// Lets the test binary stand in for the fencegate binary: a child process
// started with FENCEGATE_TEST_AS_CLI=1 runs the command line it is given
// (the lock tests' children call `fencegate envelope` this way).
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

const envTestAsCLI = "FENCEGATE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	// A wrapper's child inherits the wrapper's environment: the child is
	// the one started without arguments.
	if os.Getenv(envChild) == "ledger-write" && len(os.Args) == 1 {
		os.Exit(ledgerWriteChild())
	}
	if os.Getenv(envChild) == "lockset-record" && len(os.Args) == 1 {
		os.Exit(locksetRecordChild())
	}
	// The lock wrapper's guardian is this binary's hidden command, run
	// without the wrapper's environment variables when the wrapper runs
	// in-process.
	if os.Getenv(envTestAsCLI) == "1" || len(os.Args) == 2 && os.Args[1] == lockGuardianUse {
		// As main does: SIGTERM and SIGINT cancel the command (a lock
		// wrapper then stops its child and releases).
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	code := pgtest.Main(m)
	removeBuiltBinary()
	os.Exit(code)
}

// builtBinary is the fencegate binary the demo tests run, built once per
// test process (`go build .`) into a directory TestMain removes.
var builtBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

// demoBinary builds the binary on first use and returns its path.
func demoBinary(t *testing.T) string {
	t.Helper()
	builtBinary.once.Do(func() {
		if builtBinary.dir, builtBinary.err = os.MkdirTemp("", "fencegate-demo-bin-"); builtBinary.err != nil {
			return
		}
		bin := filepath.Join(builtBinary.dir, "fencegate")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			builtBinary.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		builtBinary.path = bin
	})
	if builtBinary.err != nil {
		t.Fatal(builtBinary.err)
	}
	return builtBinary.path
}

// removeBuiltBinary removes what demoBinary built (TestMain, at the end).
func removeBuiltBinary() {
	if builtBinary.dir != "" {
		os.RemoveAll(builtBinary.dir)
	}
}
