//go:build unix

// The rig the lock's tests share, proving nothing on its own: the real
// fencegate binary built from the repository, `serve --dev` processes on
// free ports, real PostgreSQL (testkit/pgtest), and elector processes —
// this test binary run again as a client-go LeaderElector on a Lock.
package fencedlock

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

	"github.com/fencegate/fencegate/testkit/pgtest"
)

// envElector, set, makes the test binary an elector process (electorMain).
const envElector = "FENCEDLOCK_TEST_ELECTOR"

// procWaitMax bounds every wait for a process's output: a leader's lease,
// its lock-delay and a loaded machine's scheduling, with room.
const procWaitMax = 45 * time.Second

var fencegateBin string // built by TestMain

func TestMain(m *testing.M) {
	if os.Getenv(envElector) != "" {
		os.Exit(electorMain())
	}
	dir, err := os.MkdirTemp("", "fencedlock-test-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		fencegateBin = filepath.Join(dir, "fencegate")
		build := exec.Command("go", "build", "-o", fencegateBin, "./cmd/fencegate")
		build.Dir = filepath.Join("..", "..", "..") // the repository's root, the main module
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ./cmd/fencegate: %v\n%s", err, out)
			return 1
		}
		return pgtest.Main(m)
	}()
	os.Exit(code)
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

// proc is a child process whose output the test reads as it comes.
type proc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out, err *syncBuffer
	done     chan struct{}
}

// start runs name with args and env added; the process is killed when
// the test ends.
func start(t *testing.T, env []string, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL) // a stopped process too
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

// wait waits until the process's stdout matches re and returns the
// match's groups.
func (p *proc) wait(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(procWaitMax); time.Now().Before(deadline); {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			return m
		}
		select {
		case <-p.done:
			if m := re.FindStringSubmatch(p.out.String()); m != nil {
				return m
			}
			t.Fatalf("exited before printing %s", re)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("never printed %s", re)
	return nil
}

// waitAll waits until the process's stdout matches re n times and
// returns the matches.
func (p *proc) waitAll(t *testing.T, re *regexp.Regexp, n int) [][]string {
	t.Helper()
	for deadline := time.Now().Add(procWaitMax); time.Now().Before(deadline); {
		if m := re.FindAllStringSubmatch(p.out.String(), -1); len(m) >= n {
			return m
		}
		select {
		case <-p.done:
			t.Fatalf("exited before printing %s %d times", re, n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("never printed %s %d times", re, n)
	return nil
}

// testBinary is this test binary, which runs as an elector process with
// envElector set.
func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// send writes a line to the process's stdin.
func (p *proc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, line); err != nil {
		t.Fatal(err)
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// serveDev starts `fencegate serve --dev` on a free port and returns it
// with its URL.
func serveDev(t *testing.T) (*proc, string) {
	t.Helper()
	p := start(t, nil, fencegateBin, "serve", "--dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--request-log=false")
	return p, p.wait(t, listening)[1]
}
