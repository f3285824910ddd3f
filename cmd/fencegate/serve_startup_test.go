//go:build unix

// Proves that serve's start-up cannot hurt: a path flag means the file
// named from the working directory (a relative --key starts serve, and
// starts it again), and a serve refused at start — each invalid flag in
// turn, and a store that does not answer — leaves its data directory
// byte for byte as it found it, absent when it was absent; and that the
// dashboard's login page names the token a --dev registry gives.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestServeRelativeKey is issue 42's story: `serve --key gate.key` in the
// key's directory, a relative --data-dir, started twice.
func TestServeRelativeKey(t *testing.T) {
	dir := t.TempDir()
	writeTokenFile(t, dir)
	inDir := func(args ...string) *exec.Cmd {
		c := exec.Command(os.Args[0], args...)
		c.Dir, c.Env = dir, append(os.Environ(), envTestAsCLI+"=1")
		return c
	}
	if out, err := inDir("keys", "gen", "--id", "gate-report", "--alg", "hmac-sha256", "--out", "gate.key").CombinedOutput(); err != nil {
		t.Fatalf("keys gen: %v\n%s", err, out)
	}
	for i := 1; i <= 2; i++ {
		c := inDir("serve", "--key", "gate.key", "--data-dir", "data", "--token-file", "tokens", "--authz-open",
			"--listen", "127.0.0.1:0", "--unsafe-no-fsync")
		out := &syncBuffer{}
		c.Stdout, c.Stderr = out, out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for !listenLine.MatchString(out.String()) && time.Now().Before(deadline) && c.ProcessState == nil {
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Process.Signal(os.Interrupt)
		_ = c.Wait()
		if !listenLine.MatchString(out.String()) {
			t.Fatalf("start %d with a relative --key did not listen:\n%s", i, out)
		}
	}
}

// servePathFlagWords are the words of a flag's help that say it names a
// file or directory.
var servePathFlagWords = []string{"file", "(PEM)", "directory", "CA bundle"}

// notPathFlags are serve flags whose help mentions a file without naming
// one.
var notPathFlags = map[string]bool{"authz-poll-ms": true, "gate-keys-poll-ms": true, "etcd-user": true, "etcd-password": true,
	"zookeeper-user": true, "zookeeper-password": true, "dashboard-stuck-exempt-class": true}

// TestServePathFlagsAreResolved: every serve flag whose help names a file
// or directory is resolved against the working directory.
func TestServePathFlagsAreResolved(t *testing.T) {
	c := newServeCmd()
	c.Flags().VisitAll(func(f *pflag.Flag) {
		for _, w := range servePathFlagWords {
			if strings.Contains(f.Usage, w) && len(f.Annotations[pathAnnotation]) == 0 && !notPathFlags[f.Name] {
				t.Errorf("--%s names a %s but is not resolved against the working directory (pathFlags)", f.Name, w)
			}
		}
	})
}

// badServeFlags are serve's ways to be refused at start, each appended to
// a good command line (the token file's and --authz-open replaced where
// the case says so); existing marks those that are refused only once the
// data directory holds a key and bundle.
func badServeFlags(t *testing.T, dir string) []struct {
	name     string
	args     []string
	noBase   bool
	existing bool
} {
	garbage := filepath.Join(dir, "garbage.key")
	if err := os.WriteFile(garbage, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.key")
	mustRun(t, "keys", "gen", "--id", "other", "--out", other)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	return []struct {
		name     string
		args     []string
		noBase   bool
		existing bool
	}{
		{name: "missing key", args: []string{"--key", "missing.key"}},
		{name: "garbage key", args: []string{"--key", garbage}},
		{name: "key the bundle does not trust", args: []string{"--key", other}, existing: true},
		{name: "issuer epoch 0", args: []string{"--issuer-epoch", "0"}},
		{name: "cert without key", args: []string{"--tls-cert", garbage}},
		{name: "listen syntax", args: []string{"--listen", "nonsense"}},
		{name: "listen in use", args: []string{"--listen", busy.Addr().String()}},
		{name: "log format", args: []string{"--log-format", "xml"}},
		{name: "ttl min at the skew", args: []string{"--ttl-min-ms", "100"}},
		{name: "lock delay below skew", args: []string{"--lock-delay-ms", "10"}},
		{name: "admin", args: []string{"--admin", "bad id!"}},
		{name: "missing token file", args: []string{"--token-file", filepath.Join(dir, "no-tokens")}},
		{name: "stored form", args: []string{"--stored-form", "xml"}},
		{name: "otlp endpoint", args: []string{"--otlp-endpoint", "::not a url"}},
		{name: "missing gate keys", args: []string{"--gate-keys", filepath.Join(dir, "no-gate-keys.json")}},
		{name: "ZooKeeper not answering", args: []string{"--zookeeper", "127.0.0.1:1", "--zookeeper-dial-timeout", "300ms"}},
		{name: "dev with a token file", args: []string{"--dev", "--listen", "127.0.0.1:0", "--token-file", filepath.Join(dir, "tokens")}, noBase: true},
		{name: "dev off loopback", args: []string{"--dev", "--listen", "0.0.0.0:0"}, noBase: true},
		{name: "dev with a bad limit", args: []string{"--dev", "--listen", "127.0.0.1:0", "--ttl-min-ms", "1"}, noBase: true},
	}
}

// TestServeRefusedStartLeavesDataDirAlone tries each bad flag on a data
// directory that does not exist yet (it must not afterwards), then on one
// a good serve made and stopped (it must be byte-identical).
func TestServeRefusedStartLeavesDataDirAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	tokens := writeTokenFile(t, dir)
	base := []string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", tokens, "--authz-open", "--unsafe-no-fsync"}
	cases := badServeFlags(t, dir)
	try := func(existing bool) {
		for _, c := range cases {
			if c.existing && !existing {
				continue
			}
			args := append(append([]string{}, base...), c.args...)
			if c.noBase {
				args = append([]string{"serve", "--data-dir", data, "--unsafe-no-fsync"}, c.args...)
			}
			before := treeDigest(t, data)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, errOut := &syncBuffer{}, &syncBuffer{}
			code := run(ctx, args, out, errOut)
			cancel()
			if code == 0 || listenLine.MatchString(out.String()) {
				t.Errorf("%s: serve started (exit %d):\n%s%s", c.name, code, out, errOut)
			}
			if after := treeDigest(t, data); after != before {
				t.Errorf("%s (exit %d: %s): the data directory changed:\nbefore %s\nafter  %s", c.name, code, strings.TrimSpace(errOut.String()), before, after)
			}
		}
	}
	try(false)
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("refused starts created the data directory: %v", err)
	}
	good := startServe(t, base[1:]...)
	if code := good.stop(); code != 0 {
		t.Fatalf("the good serve exited %d:\n%s", code, good.stderr)
	}
	try(true)
}

// treeDigest is every path under root with its mode and contents'
// SHA-256, in walk order; "absent" when root does not exist.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return "absent"
	}
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		h.Write([]byte(rel + "\x00" + info.Mode().String() + "\x00"))
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestDashboardLoginNamesDevToken: the dashboard's login page names the
// token serve --dev gives its admin, as serve defines it.
func TestDashboardLoginNamesDevToken(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "dashboard", "templates", "login.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), DevToken) || !strings.Contains(string(b), "serve --dev") {
		t.Fatalf("the login page does not name serve --dev's token %s:\n%s", DevToken, b)
	}
}
