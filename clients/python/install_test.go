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
// `pip install ./clients/python` into a fresh virtual environment, with
// the index turned off: the build backend is in the tree and needs
// nothing but the standard library. The environment is made with
// `python3 -m venv --without-pip` (the venv module is in Debian's
// standard library; without pip it needs no python3-venv) and Debian's
// pip installs into it (`pip --python`), as CI has python3-pip only. The
// installed copy is then imported by the environment's python from
// elsewhere, every module of it.
func TestPipInstallWithoutTheNetwork(t *testing.T) {
	t.Parallel()
	requirePython(t)
	if err := exec.Command(python, "-m", "pip", "--version").Run(); err != nil {
		if os.Getenv("FENCEGATE_REQUIRE_PIP") == "1" {
			t.Fatalf("pip required (apt-get install python3-pip): %v", err)
		}
		t.Skipf("*** SKIPPING: %s has no pip (apt-get install python3-pip) ***", python)
	}
	venv := filepath.Join(t.TempDir(), "venv")
	src, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	run(t, t.TempDir(), nil, nil, "-m", "venv", "--without-pip", venv)
	venvPython := filepath.Join(venv, "bin", "python")
	run(t, t.TempDir(), []string{"PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1"}, nil,
		"-m", "pip", "--python", venvPython, "install", "--no-index", src)
	cmd := exec.Command(venvPython, "-c", `
import fencegate, fencegate.pg, fencegate.core.acquire, fencegate.election
print(fencegate.__file__)
print(fencegate.__version__, fencegate.TTL_MIN)
`)
	cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), "PYTHONPATH=", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), venv+"/lib/") || !strings.Contains(string(out), "0.1.0 2.0") {
		t.Fatalf("the installed client (%v): %s", err, out)
	}
	records, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages", "fencegate-0.1.0.dist-info", "RECORD"))
	if len(records) != 1 {
		t.Fatalf("no RECORD in the environment: %v", records)
	}
}
