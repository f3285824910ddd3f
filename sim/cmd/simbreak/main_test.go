// This file proves the command, run as a process, makes a negative
// control fail as it must: the lease-only run exits 1 and reports stale
// writes with the seed and the command that replays a round; a run that
// names no protection is a usage error.
package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnsafeRunReportsStaleWrites(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "simbreak")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--rounds", "1000", "--seed", "42", "--unsafe"}, 1,
			[]string{"UNSAFE", "stale writes accepted", "--seed 42", "--round ", "go run ./sim/cmd/simbreak --break fence"}},
		{[]string{"--rounds", "10"}, 2, []string{"--break NAME or --unsafe"}},
		{[]string{"--rounds", "10", "--break", "nonsense"}, 2, []string{"unknown protection"}},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Errorf("simbreak %v: exit %d, want %d\n%s", c.args, code, c.code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("simbreak %v: output lacks %q\n%s", c.args, w, out)
			}
		}
	}
}
