// Lets the test binary stand in for the fencegate binary: a child process
// started with FENCEGATE_TEST_AS_CLI=1 runs the command line it is given
// (the lock tests' children call `fencegate envelope` this way).
package main

import (
	"context"
	"os"
	"testing"
)

const envTestAsCLI = "FENCEGATE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(envTestAsCLI) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
