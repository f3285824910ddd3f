// Proves the command line's contract: every command's --help goes to
// stdout with exit 0 and matches its golden file; --version reads the
// module version and VCS commit from build info; every serve flag has a
// FENCEGATE_* variable (golden list), a variable sets its flag and a flag
// on the command line wins; usage errors exit 2 and say where to look;
// completion and the docs generator work and docs/cli is up to date.
package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ and docs/cli")

// runCLI runs one command line in-process.
func runCLI(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/fencegate -run %s -update)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from its golden file (go test ./cmd/fencegate -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// commandPaths lists every command's words below the root, depth first.
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	var out [][]string
	for _, s := range c.Commands() {
		if s.Name() == "help" {
			continue
		}
		p := append(append([]string{}, prefix...), s.Name())
		out = append(out, p)
		out = append(out, commandPaths(s, p)...)
	}
	return out
}

func TestHelpGolden(t *testing.T) {
	paths := append([][]string{{}}, commandPaths(newRoot(io.Discard, io.Discard), nil)...)
	if len(paths) < 20 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, p := range paths {
		name := "fencegate"
		if len(p) > 0 {
			name += "_" + strings.Join(p, "_")
		}
		out, errOut, code := runCLI(append(p, "--help")...)
		if code != 0 || errOut != "" {
			t.Errorf("%s --help: exit %d, stderr %q; want 0 and nothing on stderr", name, code, errOut)
		}
		golden(t, filepath.Join("help", name+".txt"), out)
	}
}

func TestBareParentPrintsHelp(t *testing.T) {
	for _, p := range []string{"keys", "grant", "keys bundle", "floor", "epoch", "gate"} {
		out, _, code := runCLI(strings.Fields(p)...)
		if code != 0 || !strings.Contains(out, "Available Commands:") {
			t.Errorf("fencegate %s: exit %d, want its help and 0:\n%s", p, code, out)
		}
	}
}

func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/fencegate/fencegate", Version: "v0.2.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-07-19T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	var b strings.Builder
	b.WriteString(versionString(bi) + "\n")
	bi.Settings, bi.Main.Version = nil, "(devel)"
	b.WriteString(versionString(bi) + "\n")
	b.WriteString(versionString(nil)[:len("(devel) (commit unknown")] + "\n")
	golden(t, "version.txt", b.String())

	out, errOut, code := runCLI("--version")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "fencegate ") || !strings.Contains(out, "(commit ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if again, _, _ := runCLI("version"); again != out {
		t.Errorf("version %q differs from --version %q", again, out)
	}
}

func TestEnvNamesGolden(t *testing.T) {
	serve := newServeCmd()
	names := envFlagNames(serve)
	var missing []string
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && len(f.Annotations[envAnnotation]) == 0 {
			missing = append(missing, f.Name)
		}
	})
	if len(missing) > 0 {
		t.Errorf("serve flags without a FENCEGATE_* variable: %v", missing)
	}
	golden(t, "env-serve.txt", strings.Join(names, "\n")+"\n")
}

func TestEnvSetsFlagAndFlagWins(t *testing.T) {
	t.Setenv("FENCEGATE_DATA_DIR", "/from/env")
	t.Setenv("FENCEGATE_ADMIN", "ops-1, ops-2")
	t.Setenv("FENCEGATE_TTL_DEFAULT_MS", "7000")
	t.Setenv("FENCEGATE_LISTEN", "127.0.0.1:9999")
	c := newServeCmd()
	c.RunE = nil
	c.Run = func(*cobra.Command, []string) {}
	c.PreRunE = func(c *cobra.Command, _ []string) error { return applyEnv(c, os.LookupEnv) }
	c.SetArgs([]string{"--listen", "127.0.0.1:1234"})
	c.SetOut(&bytes.Buffer{})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	fs := c.Flags()
	for name, want := range map[string]string{
		"data-dir": "/from/env", "admin": "[ops-1,ops-2]", "ttl-default-ms": "7000", "listen": "127.0.0.1:1234",
	} {
		if v := fs.Lookup(name).Value.String(); v != want {
			t.Errorf("--%s = %q, want %q", name, v, want)
		}
	}
}

func TestEnvBadValueIsUsageError(t *testing.T) {
	t.Setenv("FENCEGATE_TTL_DEFAULT_MS", "soon")
	_, errOut, code := runCLI("serve")
	if code != 2 || !strings.Contains(errOut, `FENCEGATE_TTL_DEFAULT_MS="soon": invalid value for --ttl-default-ms`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nonsense"}, `unknown command "nonsense"`},
		{[]string{"serv"}, "did you mean serve?"},
		{[]string{"serve", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"keys", "bundle", "show"}, "--bundle is required"},
		{[]string{"keys", "bundle", "retire", "--bundle", "b.json"}, "--id is required"},
		{[]string{"keys", "gen", "--id", "k1"}, "--id and --out are required"},
		{[]string{"grant", "inspect"}, "want 1 argument(s) FILE"},
		{[]string{"sim", "--trace"}, "--trace needs --round"},
		{[]string{"serve", "--dev", "--zookeeper", "127.0.0.1:2181", "--zookeeper-jute-maxbuffer", "100"}, "--zookeeper-jute-maxbuffer 100: want 4096 to 1073741824 bytes"},
	} {
		_, errOut, code := runCLI(c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		out, _, code := runCLI("completion", sh)
		if code != 0 || !strings.Contains(out, "fencegate") || len(out) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes", sh, code, len(out))
		}
	}
	// The completion of a subcommand name, as bash asks for it.
	out, _, _ := runCLI("__complete", "se")
	if !strings.Contains(out, "serve") {
		t.Errorf("completing 'se' did not offer serve:\n%s", out)
	}
}

func TestCLIDocsUpToDate(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := runCLI("docs", "--dir", dir); code != 0 {
		t.Fatalf("docs: exit %d: %s", code, errOut)
	}
	repo := filepath.Join("..", "..", cliDocsDir)
	if *update {
		os.RemoveAll(repo)
		if _, errOut, code := runCLI("docs", "--dir", repo); code != 0 {
			t.Fatalf("docs: exit %d: %s", code, errOut)
		}
	}
	gen, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	have, _ := filepath.Glob(filepath.Join(repo, "*.md"))
	if len(gen) == 0 || len(gen) != len(have) {
		t.Fatalf("generated %d pages, %s has %d (go test ./cmd/fencegate -run CLIDocs -update)", len(gen), cliDocsDir, len(have))
	}
	for _, g := range gen {
		want, err := os.ReadFile(filepath.Join(repo, filepath.Base(g)))
		got, _ := os.ReadFile(g)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/%s is out of date (go test ./cmd/fencegate -run CLIDocs -update)", cliDocsDir, filepath.Base(g))
		}
	}
}
