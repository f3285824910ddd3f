//go:build unix

package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

// waitMax bounds every wait for a process's output: a lease of 6 s, its
// lock-delay and a loaded machine's scheduling, with room.
const waitMax = 45 * time.Second

// storyFlags are the managers' timings: a 6 s lease, renewals every
// 300 ms given up after 1 s (fencedlock's own stories use the same), a
// write every 200 ms.
var storyFlags = []string{"-lease-duration", "6s", "-renew-deadline", "1s", "-retry-period", "300ms", "-every", "200ms"}

var fencegateBin, managerBin string // built by TestMain, as a user would

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "example-manager-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		fencegateBin, managerBin = filepath.Join(dir, "fencegate"), filepath.Join(dir, "manager")
		for _, b := range []struct{ out, pkg, dir string }{
			{fencegateBin, "./cmd/fencegate", filepath.Join("..", "..", "..", "..")}, // the repository's root
			{managerBin, ".", "."},
		} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b.pkg, err, out)
				return 1
			}
		}
		return pgtest.Main(m)
	}()
	os.Exit(code)
}

// TestManagerLeadsAndWritesWithTheTermsFence runs two of the example's
// managers against a real `fencegate serve --dev` and real PostgreSQL,
// with a kubeconfig whose API server is a listener that counts
// connections. One leads and writes through the gate with its term's
// fence; the other waits. The leader is frozen (SIGSTOP) past its lease:
// the other leads at a higher term and writes. The thawed one's manager
// stops with "leader election lost" and writes nothing more, and no
// manager ever dialled the API server. (The frozen leader's in-flight
// write, refused STALE_OWNER, and its lease-only negative control are
// fencedlock's TestFrozenLeaderIsFenced.)
func TestManagerLeadsAndWritesWithTheTermsFence(t *testing.T) {
	_, registry := serveDev(t)
	dsn := pgtest.NewDatabase(t)
	kubeconfig, dials := countingAPIServer(t)
	env := []string{"KUBECONFIG=" + kubeconfig}
	args := func(id string) []string {
		return append([]string{"-registry", registry, "-database", dsn, "-id", id}, storyFlags...)
	}

	a := start(t, env, managerBin, args("a")...)
	termA := atoi(t, a.wait(t, regexp.MustCompile(`leading term=(\d+)`))[1])
	a.wait(t, regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, termA)))
	if !strings.Contains(a.out.String(), "kube-apiserver http://127.0.0.1:") {
		t.Fatalf("the manager did not take the test's kubeconfig:\n%s", a.out)
	}

	b := start(t, env, managerBin, args("b")...)
	b.wait(t, regexp.MustCompile(`started id=b`))
	// While a renews, b stays a candidate: a keeps writing, b never leads.
	n := len(accepted(a.out.String(), termA))
	a.waitAll(t, regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, termA)), n+10)
	if strings.Contains(b.out.String(), "leading") {
		t.Fatalf("b leads while a renews:\n%s", b.out)
	}

	a.signal(t, syscall.SIGSTOP)
	time.Sleep(100 * time.Millisecond) // a's last lines reach the buffer
	beforeThaw := len(accepted(a.out.String(), termA))
	termB := atoi(t, b.wait(t, regexp.MustCompile(`leading term=(\d+)`))[1])
	if termB <= termA {
		t.Fatalf("b leads at term %d, not above a's %d", termB, termA)
	}
	b.wait(t, regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, termB)))

	a.signal(t, syscall.SIGCONT)
	select {
	case <-a.done:
	case <-time.After(waitMax):
		t.Fatal("the thawed manager did not stop")
	}
	if code := a.cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(a.err.String(), "leader election lost") {
		t.Fatalf("the thawed manager exited %d without \"leader election lost\"", code)
	}
	if after := len(accepted(a.out.String(), termA)); after != beforeThaw {
		t.Fatalf("the thawed manager wrote %d more rows at its old term %d", after-beforeThaw, termA)
	}
	b.waitAll(t, regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, termB)), 3)

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var term int64
	var writer string
	if err := db.QueryRow(`SELECT term, writer FROM example_manager WHERE id = 1`).Scan(&term, &writer); err != nil {
		t.Fatal(err)
	}
	if term != int64(termB) || writer != "b" {
		t.Fatalf("the row is term %d by %s, want term %d by b", term, writer, termB)
	}

	if n := dials.Load(); n != 0 {
		t.Fatalf("the managers dialled the API server %d times", n)
	}
	// Negative control: the counter counts.
	if c, err := net.Dial("tcp", strings.TrimPrefix(kubeHost(t, kubeconfig), "http://")); err == nil {
		c.Close()
	}
	for deadline := time.Now().Add(5 * time.Second); dials.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if dials.Load() != 1 {
		t.Fatalf("the API server's listener counted %d dials of the test's one", dials.Load())
	}
}

// accepted returns the lines of out that report an accepted write at term.
func accepted(out string, term int) []string {
	return regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, term)).FindAllString(out, -1)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countingAPIServer writes a kubeconfig whose cluster is a listener that
// counts the connections it accepts and answers none.
func countingAPIServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var dials atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			c.Close()
		}
	}()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: none
  cluster:
    server: http://%s
contexts:
- name: none
  context:
    cluster: none
    user: none
current-context: none
users:
- name: none
  user:
    token: none
`, ln.Addr())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, &dials
}

func kubeHost(t *testing.T, kubeconfig string) string {
	t.Helper()
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`server: (\S+)`).FindStringSubmatch(string(b))[1]
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
	return p.waitAll(t, re, 1)[0]
}

// waitAll waits until the process's stdout matches re n times and
// returns the matches.
func (p *proc) waitAll(t *testing.T, re *regexp.Regexp, n int) [][]string {
	t.Helper()
	for deadline := time.Now().Add(waitMax); time.Now().Before(deadline); {
		if m := re.FindAllStringSubmatch(p.out.String(), -1); len(m) >= n {
			return m
		}
		select {
		case <-p.done:
			if m := re.FindAllStringSubmatch(p.out.String(), -1); len(m) >= n {
				return m
			}
			t.Fatalf("exited before printing %s %d times", re, n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("never printed %s %d times", re, n)
	return nil
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// serveDev starts `fencegate serve --dev` on a free port and returns it
// with its URL.
func serveDev(t *testing.T) (*proc, string) {
	t.Helper()
	p := start(t, nil, fencegateBin, "serve", "--dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--request-log=false")
	return p, p.wait(t, regexp.MustCompile(`listening on (http://\S+)`))[1]
}
