// Proves a failed run keeps its evidence without being asked: the run's
// directory stays, with the store's data copied in, its private files
// removed and a README naming the replay command; a passing run leaves
// nothing behind; and an undecided history fails the run with its
// reason.
package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestKeepEvidence(t *testing.T) {
	run := func(keep bool) (dir, storeDir string, kept bool) {
		dir, storeDir = t.TempDir(), t.TempDir()
		for p, body := range map[string]string{
			filepath.Join(dir, "events", "worker-01.jsonl"): "{}\n", filepath.Join(dir, "k1.key"): "secret",
			filepath.Join(dir, "tokens"): "secret", filepath.Join(storeDir, "zk1", "server-1.log"): "LEADING\n",
		} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir, storeDir, keepEvidence(dir, storeDir, keep, keep, runTag{seed: 80, backend: BackendZooKeeper, d: time.Minute})
	}
	dir, storeDir, kept := run(true)
	if !kept {
		t.Fatal("a failed run was not kept")
	}
	for _, p := range []string{"events/worker-01.jsonl", "store/zk1/server-1.log", "README"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("failed run: %s missing: %v", p, err)
		}
	}
	for _, p := range []string{"k1.key", "tokens"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("failed run: private file %s kept", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "README")); !strings.Contains(string(b), "go run ./chaos/cmd/chaoscheck "+dir) ||
		!strings.Contains(string(b), "FENCEGATE_CHAOS_SEEDS=80") {
		t.Errorf("README does not say how to replay and rerun:\n%s", b)
	}
	if _, err := os.Stat(storeDir); err == nil {
		t.Error("the store's directory apart from the run's was left behind")
	}
	dir, _, kept = run(false)
	if _, err := os.Stat(dir); kept || err == nil {
		t.Errorf("a passing run was kept (%t) or its directory left behind (%v)", kept, err)
	}
}

// TestUndecidedFails: a history porcupine could not decide fails the run,
// with the partitions that kept it undecided; it never passes.
func TestUndecidedFails(t *testing.T) {
	r := &Report{Verdict: porcupine.Unknown, Undecided: []string{"chaos/res-1 registry: 209 operations, 19 of them lost or unknown"}}
	f := strings.Join(r.Failures(true), "\n")
	if !strings.Contains(f, "no verdict within") || !strings.Contains(f, "chaos/res-1 registry: 209 operations") {
		t.Errorf("an Unknown verdict's failures: %q", f)
	}
	if ok := (&Report{Verdict: porcupine.Ok}).Failures(true); len(ok) != 0 {
		t.Errorf("an Ok verdict fails: %v", ok)
	}
}
