//go:build unix

// Proves `fencegate policy raise` with real processes: the generation
// rises through serve's admin API, every later grant carries it, a
// lower generation is refused with the registry's reason and changes
// nothing, and a raise without a note is a usage error.
package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

func TestPolicyRaiseProcesses(t *testing.T) {
	data, addr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	serveAt(t, data, addr)
	url := "http://" + addr
	reg := []string{"--registry", url, "--token", serveToken}
	const res = "policy/cli"
	lockFence(t, url, res)

	out, _ := cli(t, 0, append([]string{"policy", "raise", res, "--generation", "3", "--note", "test: CHG-31"}, reg...)...)
	if !strings.Contains(out, "raised 0 → 3") || !strings.Contains(out, "policyGeneration: 3") {
		t.Fatalf("raise to 3:\n%s", out)
	}
	is, err := adminClient(t, url).Acquire(context.Background(), wire.AcquireRequest{
		Resource: res, OperationID: "after-raise", OperationClass: "test", RequestID: "policy-raise-1", TTLMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if got := is.Grant.PolicyGeneration; got != 3 {
		t.Fatalf("grant after the raise carries policy generation %d, want 3", got)
	}

	_, errOut := cli(t, 1, append([]string{"policy", "raise", res, "--generation", "2", "--note", "test: lower"}, reg...)...)
	if !strings.Contains(errOut, "raise only") {
		t.Errorf("lowering: %s", errOut)
	}
	out, _ = cli(t, 0, append([]string{"floor", "show", res}, reg...)...)
	if !strings.Contains(out, "policyGeneration: 3") {
		t.Errorf("after the refused lowering:\n%s", out)
	}
	_, errOut = cli(t, 2, "policy", "raise", res, "--generation", "4", "--registry", url, "--token", serveToken)
	if !strings.Contains(errOut, "--note") {
		t.Errorf("without --note: %s", errOut)
	}
}
