//go:build unix

// Proves `fencegate demo` end to end with real processes: the built binary
// exits 0, the fenced run rejects the paused worker A with STALE_OWNER and
// keeps B's result, and the lease-only run lets A overwrite it, printing
// the README's lines; and that the verdict fails when either run tells
// the other story.
package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/demo/ledger"
)

func TestDemoEndToEnd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	bin := demoBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, bin, "demo").CombinedOutput()
	t.Logf("demo took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("demo: %v (want exit status 0)", err)
	}
	for _, want := range []string{
		"worker A  REJECTED STALE_OWNER: fence 1 < highest 2",
		"receipt query for operation settle-a under fence 1: PROVEN_ABSENT",
		"worker B  ACCEPTED fence 2 segment 1, receipt sha256:",
		"worker B  ACCEPTED fence 2 segment 2, receipt sha256:",
		`fenced:     ledger keeps "200 (computed by B)" by worker-b (fence 2): B's result intact=true`,
		`lease-only: ledger holds "100 (computed by A before its pause)" by worker-a: B's result overwritten=true`,
		"VERDICT: PASS",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	for _, re := range readmeDemoLines(t) {
		if !re.Match(out) {
			t.Errorf("README's demo line %s is not what the demo prints", re)
		}
	}
}

// readmeDemoLines are the README's lines of demo output as patterns: the
// elapsed time ("t+ 3.69s") and "…" stand for whatever the run prints.
func readmeDemoLines(t *testing.T) []*regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "lease-only run lost it")
	_, rest, ok2 := strings.Cut(rest, "```\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md: no demo output block after \"lease-only run lost it\"")
	}
	var out []*regexp.Regexp
	elapsed := regexp.MustCompile(`^t\+\s*\d+\.\d+s`)
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		pat := regexp.QuoteMeta(line)
		pat = strings.ReplaceAll(pat, "…", ".*")
		if elapsed.MatchString(line) {
			pat = `t\+\s*\d+\.\d+s` + strings.TrimPrefix(pat, regexp.QuoteMeta(elapsed.FindString(line)))
		}
		out = append(out, regexp.MustCompile("(?m)^"+pat+"$"))
	}
	if len(out) == 0 {
		t.Fatal("README.md: an empty demo output block")
	}
	return out
}

func TestDemoVerdictFailsUnlessBothRunsTellTheStory(t *testing.T) {
	const a, b = "100 (A)", "200 (B)"
	fenced := storyResult{aOutcome: "STALE_OWNER", final: ledger.Value{Value: b}, bValue: b}
	unsafe := storyResult{aOutcome: "ACCEPTED", final: ledger.Value{Value: a}, bValue: b}
	overwritten := fenced
	overwritten.final.Value, overwritten.aOutcome = a, "ACCEPTED"
	for _, c := range []struct {
		name           string
		fenced, unsafe storyResult
		ok             bool
	}{
		{"both as expected", fenced, unsafe, true},
		{"the gate let A overwrite B", overwritten, unsafe, false},
		{"lease-only kept B (the control proves nothing)", fenced, fenced, false},
	} {
		var out bytes.Buffer
		d := &demo{out: &out, start: time.Now()}
		err := d.verdict(c.fenced, c.unsafe)
		if (err == nil) != c.ok {
			t.Errorf("%s: verdict error %v, want ok=%t\n%s", c.name, err, c.ok, out.String())
		}
	}
}
