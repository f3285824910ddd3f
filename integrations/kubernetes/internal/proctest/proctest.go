//go:build unix

// Package proctest runs the module's test processes — the real fencegate
// binary, `serve --dev` on a free port, elector and manager processes —
// and reads their output as it comes. It proves nothing on its own; the
// fencedlock stories and the manager example's test share it.
package proctest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// WaitMax bounds every wait for a process's output: a leader's lease (6 s
// in the stories), its lock-delay and a loaded machine's scheduling, with
// room.
const WaitMax = 45 * time.Second

// BuildFencegate builds the repository's fencegate binary into dir, as a
// user would; root is the repository's root (the main module).
func BuildFencegate(dir, root string) (string, error) {
	bin := filepath.Join(dir, "fencegate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/fencegate")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/fencegate: %w\n%s", err, out)
	}
	return bin, nil
}

// syncBuffer is an output a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Proc is a child process whose output the test reads as it comes.
type Proc struct {
	Cmd      *exec.Cmd
	stdin    io.WriteCloser
	out, err *syncBuffer
	done     chan struct{}
}

// Start runs name with args and env added; the process is killed when
// the test ends, and its output logged if the test failed.
func Start(t *testing.T, env []string, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(name, args...), out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.out, p.err
	var err error
	if p.stdin, err = p.Cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Signal(syscall.SIGKILL) // a stopped process too
		<-p.done
		if t.Failed() {
			t.Logf("%s %v:\nstdout:\n%s\nstderr (last 4 kB):\n%s", filepath.Base(name), args, p.out, tail(p.err.String(), 4096))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Out is the process's stdout so far.
func (p *Proc) Out() string { return p.out.String() }

// Err is the process's stderr so far.
func (p *Proc) Err() string { return p.err.String() }

// Done is closed once the process has exited (Cmd.ProcessState is then
// set).
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits until the process's stdout matches re and returns the
// match's groups.
func (p *Proc) Wait(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	return p.WaitAll(t, re, 1)[0]
}

// WaitAll waits until the process's stdout matches re n times and
// returns the matches. Output printed just before the process exited
// counts.
func (p *Proc) WaitAll(t *testing.T, re *regexp.Regexp, n int) [][]string {
	t.Helper()
	for deadline := time.Now().Add(WaitMax); time.Now().Before(deadline); {
		if m := re.FindAllStringSubmatch(p.Out(), -1); len(m) >= n {
			return m
		}
		select {
		case <-p.done:
			if m := re.FindAllStringSubmatch(p.Out(), -1); len(m) >= n {
				return m
			}
			t.Fatalf("exited before printing %s %d times", re, n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("never printed %s %d times", re, n)
	return nil
}

// Send writes a line to the process's stdin.
func (p *Proc) Send(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, line); err != nil {
		t.Fatal(err)
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// ServeDev starts bin's `serve --dev` on a free port and returns it with
// its URL.
func ServeDev(t *testing.T, bin string) (*Proc, string) {
	t.Helper()
	p := Start(t, nil, bin, "serve", "--dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--request-log=false")
	return p, p.Wait(t, listening)[1]
}
