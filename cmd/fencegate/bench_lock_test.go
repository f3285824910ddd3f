//go:build unix

// This file measures the first hour's command as a user runs it: the
// built binary's `fencegate lock RESOURCE -- true` against serve on its
// embedded etcd, and `etcdctl lock RESOURCE true` (what an etcd user
// would run instead) against the same member, each a whole process,
// alternating; `version` of each binary is the process-start floor.
// Nothing is asserted.
package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkLockCommand times whole processes: lock-ms is the wall time of
// `fencegate lock bench/lock-cmd -- true` (acquire, renewals armed, the
// child run, release), etcdctl-lock-ms that of `etcdctl lock`, and
// *-start-ms each binary's `version`, what starting the process costs
// before any call. It needs etcdctl on PATH (Debian's etcd-client).
func BenchmarkLockCommand(b *testing.B) {
	etcdctl, err := exec.LookPath("etcdctl")
	if err != nil {
		b.Skip("etcdctl not on PATH (Debian: apt-get install etcd-client)")
	}
	// Built from this file's own directory: scripts/bench-all.sh runs the
	// test binary elsewhere.
	_, self, _, _ := runtime.Caller(0)
	bin := filepath.Join(b.TempDir(), "fencegate")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Dir(self)
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build in %s: %v\n%s", build.Dir, err, out)
	}
	dir := b.TempDir()
	url, stderr := startServeBench(b, "--data-dir", filepath.Join(dir, "serve"), "--listen", "127.0.0.1:0",
		"--token-file", benchTokenFile(b, dir), "--authz-open")
	m := embeddedLine.FindStringSubmatch(stderr.String())
	if m == nil {
		// A serve from before it named the endpoint: a base revision that
		// scripts/bench-all.sh compares against, where the row is "not run".
		b.Skipf("serve names no endpoint of its embedded etcd:\n%s", stderr)
	}
	env := append(os.Environ(), "FENCEGATE_REGISTRY="+url, "FENCEGATE_TOKEN="+serveToken, "ETCDCTL_API=3")
	endpoints := "--endpoints=" + strings.Split(m[1], ",")[0]
	commands := []struct {
		unit string
		argv []string
	}{
		{"lock-ms", []string{bin, "lock", "bench/lock-cmd", "--", "true"}},
		{"etcdctl-lock-ms", []string{etcdctl, endpoints, "lock", "bench/etcdctl-cmd", "true"}},
		{"start-ms", []string{bin, "version"}},
		{"etcdctl-start-ms", []string{etcdctl, "version"}},
	}
	ctx := context.Background()
	times := make([][]float64, len(commands))
	run := func(k int) float64 {
		c := exec.CommandContext(ctx, commands[k].argv[0], commands[k].argv[1:]...)
		c.Env = env
		t0 := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", strings.Join(commands[k].argv, " "), err, out)
		}
		return float64(time.Since(t0).Microseconds()) / 1000
	}
	for k := range commands { // warm the page cache and the member
		run(k)
	}
	var ratio []float64
	for i := 0; b.Loop(); i++ {
		ms := make([]float64, len(commands))
		for j := range commands {
			k := (i + j) % len(commands)
			ms[k] = run(k)
			times[k] = append(times[k], ms[k])
		}
		ratio = append(ratio, ms[0]/ms[1])
	}
	for k, c := range commands {
		b.ReportMetric(medianOf(times[k]), c.unit)
	}
	b.ReportMetric(medianOf(ratio), "ratio")
}
