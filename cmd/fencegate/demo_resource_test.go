//go:build unix

// Proves `fencegate demo --resource redis|s3` end to end with real
// processes: a real redis-server or an S3-compatible store (testkit/s3local,
// which the binary does not link, passed by --s3-endpoint), the
// resledger service on it, the fenced run rejecting the paused worker A
// with STALE_OWNER and keeping B's result, the lease-only run on the same
// store losing it.
package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/s3local"
)

func TestDemoResources(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	bin := demoBinary(t)
	s3, err := s3local.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []struct {
		resource, store string
		flags           []string
	}{
		{"redis", "redis-server 127.0.0.1:", nil},
		{"s3", "S3-compatible store at " + s3.URL, []string{"--s3-endpoint", s3.URL}},
	} {
		t.Run(row.resource, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath("redis-server"); err != nil && row.resource == "redis" {
				if os.Getenv("FENCEGATE_REQUIRE_REDIS") == "1" {
					t.Fatalf("redis-server required: %v", err)
				}
				t.Skipf("*** SKIPPING: no redis-server (%v); set FENCEGATE_REQUIRE_REDIS=1 to make this a failure ***", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, append([]string{"demo", "--resource", row.resource}, row.flags...)...).CombinedOutput()
			t.Logf("demo --resource %s:\n%s", row.resource, out)
			if err != nil {
				t.Fatalf("demo: %v (want exit status 0)", err)
			}
			for _, want := range []string{
				row.store,
				"fenced ledger listening on http://127.0.0.1:",
				"(" + row.resource + ", trust bundle from the registry)",
				"worker A  REJECTED STALE_OWNER: fence 1 < highest 2",
				"receipt query for operation settle-a under fence 1: PROVEN_ABSENT",
				"worker B  ACCEPTED fence 2 segment 2, receipt sha256:",
				`fenced:     ledger keeps "200 (computed by B)" by worker-b (fence 2): B's result intact=true`,
				`lease-only: ledger holds "100 (computed by A before its pause)" by worker-a: B's result overwritten=true`,
				"VERDICT: PASS",
			} {
				if !strings.Contains(string(out), want) {
					t.Errorf("demo output lacks %q", want)
				}
			}
		})
	}
}
