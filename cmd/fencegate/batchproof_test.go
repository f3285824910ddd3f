// This file proves `serve --grant-batch-proofs` as a user runs it: a
// `fencegate lock` child is handed a batch proof as it came (the lock
// passes proofs on; the gate verifies them).
package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestServeGrantBatchProofs(t *testing.T) {
	t.Parallel()
	_, url := serveProc(t, "--grant-batch-proofs")
	p := lockProc(t, url, "r/batch", "--", "sh", "-c", `echo "proof=$FENCEGATE_GRANT_PROOF"`)
	if code := p.wait(t, "lock"); code != 0 {
		t.Fatalf("lock exited %d:\n%s%s", code, p.out, p.err)
	}
	m := regexp.MustCompile(`proof=(\S+)`).FindStringSubmatch(p.out.String())
	if m == nil || !strings.HasPrefix(m[1], "batch:") {
		t.Fatalf("the child saw no batch proof:\n%s%s", p.out, p.err)
	}
}
