// Proves `pip install ./clients/python` works on a machine without the
// network: the build backend is in the tree and needs only the standard
// library, so pip's isolated build has nothing to download.
package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPipInstallWithoutTheNetwork installs the client as a user would,
// `pip install ./clients/python`, with the index turned off: the build
// backend is in the tree and needs nothing but the standard library. The
// installed copy is then imported from elsewhere, every module of it.
func TestPipInstallWithoutTheNetwork(t *testing.T) {
	requirePython(t)
	if err := exec.Command(python, "-m", "pip", "--version").Run(); err != nil {
		if os.Getenv("FENCEGATE_REQUIRE_PIP") == "1" {
			t.Fatalf("pip required (apt-get install python3-pip): %v", err)
		}
		t.Skipf("*** SKIPPING: %s has no pip (apt-get install python3-pip) ***", python)
	}
	target := t.TempDir()
	src, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	run(t, t.TempDir(), []string{"PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1"}, nil,
		"-m", "pip", "install", "--no-index", "--target", target, src)
	out := run(t, t.TempDir(), []string{"PYTHONPATH=" + target}, nil, "-c", `
import fencegate, fencegate.pg, fencegate.core.acquire, fencegate.election
print(fencegate.__file__)
print(fencegate.__version__, fencegate.TTL_MIN)
`)
	if !strings.HasPrefix(string(out), target) || !strings.Contains(string(out), "0.1.0 2.0") {
		t.Fatalf("the installed client: %s", out)
	}
	if _, err := os.Stat(filepath.Join(target, "fencegate-0.1.0.dist-info", "RECORD")); err != nil {
		t.Fatalf("no RECORD: %v", err)
	}
}
