//go:build unix

// Proves the guardian with real processes: a wrapper process (this test
// binary running Run, TestMain) whose child started a grandchild is
// killed with SIGKILL; with the guardian the grandchild is gone within a
// second, and the negative control, the same wrapper without a guardian,
// leaves the grandchild running (the parent-death signal reaches only the
// child). A child that exits leaving a process in its group has it ended
// before Run returns.
package lockexec

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/childproc"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

// envTestRole makes this test binary a wrapper ("wrapper-guarded",
// "wrapper-bare") or the guardian ("guardian").
const envTestRole = "LOCKEXEC_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(envTestRole) {
	case "guardian":
		os.Exit(Guard(os.Stdin, os.Stderr))
	case "wrapper-guarded", "wrapper-bare":
		os.Exit(testWrapper(os.Getenv(envTestRole) == "wrapper-guarded", os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// testSession is a session on an in-memory registry.
func testSession() (*client.Session, error) {
	key, err := grant.GenerateKey(grant.AlgEd25519, "lockexec-test", rand.Reader)
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(memstore.New(), registry.DefaultConfig(1), clock.System{}, key)
	if err != nil {
		return nil, err
	}
	return client.NewSession(registry.Direct{Registry: reg, Owner: "worker-1"}, client.Options{}), nil
}

// testWrapper runs script under a lease, with or without the guardian.
func testWrapper(guarded bool, script string) int {
	s, err := testSession()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := Config{Session: s, Request: wire.AcquireRequest{Resource: "lx/guard", TTLMs: 10_000},
		Command: "sh", Args: []string{"-c", script}, Grace: time.Second}
	if guarded {
		os.Setenv(envTestRole, "guardian")
		cfg.Guardian = []string{os.Args[0]}
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return res.ExitCode
}

var grandchildLine = regexp.MustCompile(`grandchild (\d+)`)

// killedWrapper starts a wrapper whose child starts `sleep 60`, kills the
// wrapper with SIGKILL once the sleep runs, and returns the sleep's pid.
func killedWrapper(t *testing.T, guarded bool) int {
	t.Helper()
	role := "wrapper-bare"
	if guarded {
		role = "wrapper-guarded"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", `sleep 60 & echo "grandchild $!"; wait`)
	cmd.Env = append(os.Environ(), envTestRole+"="+role)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	pid := 0
	for pid == 0 && lines.Scan() {
		if m := grandchildLine.FindStringSubmatch(lines.Text()); m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
	}
	if pid == 0 {
		t.Fatalf("the child never reported its grandchild")
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	go func() { // drain: the orphaned sleep may hold the pipe
		for lines.Scan() {
		}
	}()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return pid
}

// running reports whether pid runs (a zombie does not).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// guardianBound is how long the guardian may take to end the child's
// tree after the wrapper dies. It is usually tens of milliseconds; a
// second was missed when the whole tree's tests ran beside it on two
// cores (CI's go test ./...), so the bound leaves room for the scheduler,
// and the control waits longer than it.
const guardianBound = 5 * time.Second

func TestGuardianKillsTheChildsTreeWithTheWrapper(t *testing.T) {
	pid := killedWrapper(t, true)
	start := time.Now()
	for running(pid) && time.Since(start) < guardianBound {
		time.Sleep(10 * time.Millisecond)
	}
	if running(pid) {
		t.Fatalf("the grandchild (pid %d) still runs %v after the wrapper's SIGKILL", pid, guardianBound)
	}
	t.Logf("the grandchild ended %v after the wrapper's SIGKILL", time.Since(start).Round(time.Millisecond))
}

func TestNegativeControlWithoutGuardianTheGrandchildRunsOn(t *testing.T) {
	pid := killedWrapper(t, false)
	time.Sleep(guardianBound + 500*time.Millisecond)
	if !running(pid) {
		t.Fatalf("the grandchild (pid %d) died without a guardian: the test above proves nothing", pid)
	}
}

// TestChildsLeftoversEndedBeforeRunReturns: a child that exits leaving a
// process in its group (and one that ignores SIGTERM) has them ended
// before Run returns, so nothing of it outlives the release.
func TestChildsLeftoversEndedBeforeRunReturns(t *testing.T) {
	s, err := testSession()
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuf{}
	res, err := Run(context.Background(), Config{Session: s, Request: wire.AcquireRequest{Resource: "lx/left", TTLMs: 10_000},
		Command: "sh", Args: []string{"-c", `sleep 60 & echo "grandchild $!"; sh -c 'trap "" TERM; echo "stubborn $$"; exec sleep 60' & sleep 0.2; exit 3`},
		Grace: 300 * time.Millisecond, Stdout: out, Stderr: out, Log: out})
	if err != nil || res.ExitCode != 3 {
		t.Fatalf("%+v %v:\n%s", res, err, out)
	}
	for _, re := range []*regexp.Regexp{grandchildLine, regexp.MustCompile(`stubborn (\d+)`)} {
		m := re.FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no %s in:\n%s", re, out)
		}
		pid, _ := strconv.Atoi(m[1])
		if running(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("pid %d (%s) outlived Run:\n%s", pid, m[0], out)
		}
	}
	if !strings.Contains(out.String(), "then SIGKILL") {
		t.Errorf("the wrapper did not say it killed what ignored SIGTERM:\n%s", out)
	}
	if !childproc.GroupAlive(syscall.Getpgrp()) {
		t.Errorf("GroupAlive says this test's own group is empty")
	}
}
