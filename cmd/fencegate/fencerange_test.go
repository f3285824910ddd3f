//go:build unix

// Proves `fencegate fence-range bump` and `show` with real processes:
// through a running serve (the admin API), and directly on a stopped
// serve's --data-dir (a restored store, bumped before serve starts on
// it). After each bump the next fence is generation<<32 | 1, above every
// fence issued before, and the generations only rise; a store named
// twice, or a data directory that is not there, is refused.
package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// serveAt starts `fencegate serve` as a process on data at addr (fixed,
// so the registry's URL survives a restart) with the tests' token file,
// worker-1 an admin, plus extra flags.
func serveAt(t *testing.T, data, addr string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--data-dir", data, "--listen", addr, "--token-file", writeTokenFile(t, t.TempDir()),
		"--unsafe-no-fsync", "--authz-open", "--admin", "worker-1"}, extra...)
	p := startProc(t, args...)
	p.waitOutput(t, listenLine)
	return p
}

// stopProc stops p with SIGTERM, as an operator stops serve, and fails
// unless it exits 0.
func stopProc(t *testing.T, p *proc, what string) {
	t.Helper()
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	if code := p.wait(t, what); code != 0 {
		t.Fatalf("%s exited %d on SIGTERM:\n%s%s", what, code, p.out, p.err)
	}
}

// cli runs `fencegate args...` as a process and returns its output; it
// fails the test unless the exit code is want.
func cli(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	p := startProc(t, args...)
	if code := p.wait(t, args[0]); code != want {
		t.Fatalf("fencegate %s: exit %d, want %d:\n%s%s", strings.Join(args, " "), code, want, p.out, p.err)
	}
	return p.out.String(), p.err.String()
}

var (
	bumpedLine = regexp.MustCompile(`generation (\d+) → (\d+)`)
	shownGen   = regexp.MustCompile(`generation: (\d+)`)
	fenceLine  = regexp.MustCompile(`fence=(\d+)`)
)

// atoiMatch parses re's first group in s, failing the test when absent.
func atoiMatch(t *testing.T, re *regexp.Regexp, s string) uint64 {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, s)
	}
	n, err := strconv.ParseUint(m[len(m)-1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// lockFence takes resource once through a `fencegate lock` process and
// returns the fence its child saw.
func lockFence(t *testing.T, url, resource string) uint64 {
	t.Helper()
	p := lockProc(t, url, resource, "--no-wait", "--", "sh", "-c", `echo "fence=$FENCEGATE_FENCE"`)
	if code := p.wait(t, "lock "+resource); code != 0 {
		t.Fatalf("lock %s: exit %d:\n%s%s", resource, code, p.out, p.err)
	}
	return atoiMatch(t, fenceLine, p.out.String())
}

func TestFenceRangeBumpAndShowProcesses(t *testing.T) {
	t.Parallel()
	data, addr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	serve := serveAt(t, data, addr)
	url := "http://" + addr
	reg := []string{"--registry", url, "--token", serveToken}
	const res = "range/cli"
	if f1, f2 := lockFence(t, url, res), lockFence(t, url, res); f1 != 1 || f2 != 2 {
		t.Fatalf("fences before any bump: %d, %d; want 1, 2", f1, f2)
	}
	out, _ := cli(t, 0, append([]string{"fence-range", "show"}, reg...)...)
	if g := atoiMatch(t, shownGen, out); g != 0 || !strings.Contains(out, "never bumped") {
		t.Fatalf("show before any bump:\n%s", out)
	}

	// Through the registry: the next fence is the new range's first.
	before := uint64(time.Now().Unix())
	out, _ = cli(t, 0, append([]string{"fence-range", "bump", "--note", "test: through serve"}, reg...)...)
	g1 := atoiMatch(t, bumpedLine, out)
	if g1 < before {
		t.Fatalf("bumped to generation %d, below the clock's %d:\n%s", g1, before, out)
	}
	if f := lockFence(t, url, res); f != g1<<lockstate.FenceCounterBits|1 {
		t.Fatalf("fence after the bump: %d, want %d<<32|1 = %d", f, g1, g1<<lockstate.FenceCounterBits|1)
	}
	if !strings.Contains(serve.err.String(), "bump-fence-range") {
		t.Errorf("serve's audit log does not record the bump:\n%s", serve.err)
	}
	stopProc(t, serve, "serve")

	// Directly on the stopped serve's --data-dir: show, bump (audited on
	// stderr), and serve continues above it.
	out, _ = cli(t, 0, "fence-range", "show", "--data-dir", data)
	if g := atoiMatch(t, shownGen, out); g != g1 {
		t.Fatalf("show on the data dir: generation %d, want %d:\n%s", g, g1, out)
	}
	out, errOut := cli(t, 0, "fence-range", "bump", "--data-dir", data, "--note", "test: restored store", "--clock-skew-max-ms", "200")
	g2 := atoiMatch(t, bumpedLine, out)
	if g2 <= g1 || !strings.Contains(errOut, "action=bump-fence-range") || !strings.Contains(errOut, "via=store") {
		t.Fatalf("bump on the data dir: generation %d after %d; stderr:\n%s", g2, g1, errOut)
	}
	serveAt(t, data, addr)
	if f := lockFence(t, url, res); f != g2<<lockstate.FenceCounterBits|1 {
		t.Fatalf("fence after the direct bump: %d, want %d", f, g2<<lockstate.FenceCounterBits|1)
	}
	rc := adminClient(t, url)
	if info, err := rc.Resource(context.Background(), res); err != nil || info.FenceGeneration != g2 || info.NextFence != g2<<lockstate.FenceCounterBits|2 {
		t.Fatalf("resource after the direct bump: %+v, %v", info, err)
	}

	// Refusals: two stores named, an embedded etcd that is not there.
	_, errOut = cli(t, 2, "fence-range", "bump", "--note", "x", "--registry", url, "--clock-skew-max-ms", "200")
	if !strings.Contains(errOut, "serve's own bound") {
		t.Errorf("--clock-skew-max-ms through the registry: %s", errOut)
	}
	_, errOut = cli(t, 2, "fence-range", "show", "--registry", url, "--data-dir", data)
	if !strings.Contains(errOut, "not both") {
		t.Errorf("--registry with --data-dir: %s", errOut)
	}
	_, errOut = cli(t, 2, "fence-range", "show", "--data-dir", data, "--stored-form", "xml")
	if !strings.Contains(errOut, "want compact or json") {
		t.Errorf("--stored-form xml: %s", errOut)
	}
	_, errOut = cli(t, 1, "fence-range", "show", "--data-dir", filepath.Join(t.TempDir(), "typo"))
	if !strings.Contains(errOut, "no embedded etcd") {
		t.Errorf("show on a missing data dir: %s", errOut)
	}
	_, errOut = cli(t, 1, "fence-range", "bump", "--note", "typo", "--data-dir", filepath.Join(t.TempDir(), "typo"))
	if !strings.Contains(errOut, "not a directory") {
		t.Errorf("bump on a missing data dir: %s", errOut)
	}
}

// adminClient is a registry client as the admin identity worker-1.
func adminClient(t *testing.T, url string) *httpclient.Client {
	t.Helper()
	c, err := httpclient.NewClient(url, httpclient.WithBearerToken(serveToken))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
