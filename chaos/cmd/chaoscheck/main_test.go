// Proves chaoscheck replays a kept run with the store members' logs
// beside its history: seed 187's run directory passes (the logs show
// ZooKeeper lost the grant the registry issued again), the same history
// without its store/ fails on that fence, seed 80's (recorded before the
// watch) fails Illegal, seed 207's (recorded before zkstore's record
// identity) fails Illegal naming ZooKeeper's fork, and bad usage exits 2.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtures = "../../testdata"

func TestChaoscheck(t *testing.T) {
	noStore := filepath.Join(t.TempDir(), "seed187-zookeeper-mutantfalse-1", "events")
	copyDir(t, filepath.Join(fixtures, "zkloss187", "events"), noStore)
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"seed 187 with its members' logs", []string{"-seed", "187", filepath.Join(fixtures, "zkloss187")}, 0,
			[]string{"porcupine Ok", "StoreWentBack:1", "PASS"}},
		{"seed 187 without them", []string{filepath.Dir(noStore)}, 1,
			[]string{"seed 187", "FAIL: porcupine: Illegal", "FAIL: fence reused across grants by the registry: 1"}},
		{"seed 80 as recorded", []string{"-seed", "80", filepath.Join(fixtures, "zkloss80")}, 1,
			[]string{"FAIL: porcupine: Illegal", "FAIL: fence reused across grants by the registry: 4"}},
		{"seed 207 as recorded (before zkstore's record identity)", []string{"-seed", "207", filepath.Join(fixtures, "zkopen207")}, 1,
			[]string{"FAIL: porcupine: Illegal", "FAIL: on a store that forked: ZooKeeper forked: zk3 truncated its log to 0x200000002, then at 14:08:32.908 loaded a snapshot reaching 0x200000004"}},
		{"no directory", nil, 2, nil},
	} {
		var out, errs strings.Builder
		code := run(append([]string{"-vis", t.TempDir()}, c.args...), &out, &errs)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, code, c.code, out.String(), errs.String())
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: the report does not say %q:\n%s", c.name, w, out.String())
			}
		}
	}
}

// copyDir copies the files of from into to, created.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(from, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in %s: %v", from, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
