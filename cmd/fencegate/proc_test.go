//go:build unix

// Runs the CLI as real processes for the tests that are about how
// processes behave together (the test binary stands in for the fencegate
// binary through FENCEGATE_TEST_AS_CLI, main_test.go): a serve process,
// lock processes queueing behind each other, a child that exits.
package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// procWaitMax bounds how long a test waits for a process it started.
const procWaitMax = 90 * time.Second

// proc is a CLI process a test started.
type proc struct {
	cmd      *exec.Cmd
	out, err *syncBuffer
	stdin    io.WriteCloser
	done     chan struct{}
	code     int
}

// startProc starts `fencegate args...` as a process of its own; it is
// killed when the test ends, if still running.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	return startProcWith(t, nil, args...)
}

// startProcWith is startProc with env adjusting the environment (nil: as
// is); the process's stdin is a pipe (proc.stdin).
func startProcWith(t *testing.T, env func([]string) []string, args ...string) *proc {
	t.Helper()
	return startExec(t, os.Args[0], func(e []string) []string {
		e = append(e, envTestAsCLI+"=1", "FG="+os.Args[0])
		if env != nil {
			e = env(e)
		}
		return e
	}, args...)
}

// startExec starts the program name with args as a process of its own
// (in a process group of its own, its stdin a pipe), env adjusting the
// test's environment (nil: as is); it is killed when the test ends, if
// still running.
func startExec(t *testing.T, name string, env func([]string) []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = os.Environ()
	if env != nil {
		p.cmd.Env = env(p.cmd.Env)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		// SIGTERM first: a lock wrapper stops its child (in a process
		// group of its own), which would otherwise keep the output pipes
		// open; then SIGKILL.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// wait returns the process's exit code once it exits.
func (p *proc) wait(t *testing.T, what string) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(procWaitMax):
		t.Fatalf("%s: still running after %s:\n%s%s", what, procWaitMax, p.out, p.err)
		return -1
	}
}

// waitOutput waits until the process's stdout matches re and returns the
// last group (or the whole match).
func (p *proc) waitOutput(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	m := p.waitOutputAll(t, re)
	return m[len(m)-1]
}

// waitOutputAll waits until the process's stdout matches re and returns
// the match and its groups.
func (p *proc) waitOutputAll(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(procWaitMax)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			return m
		}
		select {
		case <-p.done:
			if m := re.FindStringSubmatch(p.out.String()); m != nil { // printed just before it exited
				return m
			}
			t.Fatalf("exited %d before printing %s:\n%s%s", p.code, re, p.out, p.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("never printed %s:\n%s%s", re, p.out, p.err)
	return nil
}

// serveProc starts `fencegate serve` as a process on a fresh data
// directory with the lock tests' token, plus extra flags, and returns it
// with its URL.
func serveProc(t *testing.T, extra ...string) (*proc, string) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"serve", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--token-file", writeTokenFile(t, dir), "--unsafe-no-fsync", "--authz-open"}, extra...)
	p := startProc(t, args...)
	return p, p.waitOutput(t, listenLine)
}

// lockProc starts `fencegate lock` against the registry at url.
func lockProc(t *testing.T, url string, args ...string) *proc {
	t.Helper()
	return startProc(t, append([]string{"lock", "--registry", url, "--token", lockToken}, args...)...)
}
