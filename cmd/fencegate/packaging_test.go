// Proves the packaging: scripts/build-static.sh (what the Dockerfile
// runs) makes a statically linked binary that reports the version and
// commit it was given; every FENCEGATE_* variable in deploy/fencegate.env
// and the Dockerfile is a real serve variable; the systemd unit passes
// `systemd-analyze verify` with no warning (a unit with a misspelt key, the
// negative control, does not); the Dockerfile is multi-stage, static,
// non-root. (docker build itself cannot run on the CI machine: it has no
// Docker daemon.)
package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const repoRoot = "../.."

func TestStaticBuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "fencegate")
	if out, err := exec.Command("bash", filepath.Join(repoRoot, "scripts", "build-static.sh"), bin, "v9.8.7", "0123456789abcdef").CombinedOutput(); err != nil {
		t.Fatalf("build-static.sh: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("the binary is dynamically linked (program header %s)", p.Type)
		}
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "fencegate v9.8.7 (commit 0123456789ab,") {
		t.Fatalf("--version: %q %v", out, err)
	}
}

func TestDeployEnvNamesAreServeFlags(t *testing.T) {
	known := map[string]bool{}
	for _, line := range envFlagNames(newServeCmd()) {
		known[strings.Fields(line)[0]] = true
	}
	known["FENCEGATE_ETCD_PASSWORD"] = true // the hidden flag's variable
	re := regexp.MustCompile(`\bFENCEGATE_[A-Z_]+`)
	for _, f := range []string{"deploy/fencegate.env", "Dockerfile"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		names := re.FindAllString(string(b), -1)
		if len(names) == 0 {
			t.Fatalf("%s names no variable", f)
		}
		for _, n := range names {
			if !known[n] && n != "FENCEGATE_FOO_BAR" {
				t.Errorf("%s sets %s, which serve does not read", f, n)
			}
		}
	}
}

func TestSystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("SKIPPING: no systemd-analyze")
	}
	unit, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "fencegate.service"))
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable() // any executable stands in for ExecStart's binary
	dir := t.TempDir()
	verify := func(name, body string) string {
		body = strings.ReplaceAll(body, "/usr/local/bin/fencegate", self)
		body = strings.ReplaceAll(body, "EnvironmentFile=/etc/fencegate/fencegate.env", "EnvironmentFile=-"+filepath.Join(dir, "none.env"))
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sa, "verify", p).CombinedOutput()
		if err != nil {
			return string(out) + err.Error()
		}
		return string(out)
	}
	if out := verify("fencegate.service", string(unit)); strings.Contains(out, "fencegate.service") {
		t.Fatalf("systemd-analyze verify complains:\n%s", out)
	}
	if out := verify("broken.service", strings.Replace(string(unit), "Restart=", "Restartt=", 1)); !strings.Contains(out, "Unknown key") {
		t.Fatalf("the negative control passed verify:\n%s", out)
	}
}

func TestDockerfileShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	d := string(b)
	for _, want := range []string{"FROM golang:1.26", " AS build", "scripts/build-static.sh", "FROM gcr.io/distroless/static",
		"COPY --from=build", "USER nonroot", `ENTRYPOINT ["/usr/local/bin/fencegate"]`, "VOLUME", "EXPOSE 7420"} {
		if !strings.Contains(d, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if n := strings.Count(d, "\nFROM "); n != 2 {
		t.Errorf("%d stages, want 2 (build, runtime)", n)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "LICENSE")); err != nil {
		t.Error("no LICENSE")
	}
}
