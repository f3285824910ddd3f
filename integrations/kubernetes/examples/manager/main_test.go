//go:build unix

package main

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/fencegate/fencegate/integrations/kubernetes/internal/proctest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

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
		fencegateBin, err = proctest.BuildFencegate(dir, filepath.Join("..", "..", "..", "..")) // the repository's root
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		managerBin = filepath.Join(dir, "manager")
		if out, err := exec.Command("go", "build", "-o", managerBin, ".").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build .: %v\n%s", err, out)
			return 1
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
	_, registry := proctest.ServeDev(t, fencegateBin)
	dsn := pgtest.NewDatabase(t)
	kubeconfig, dials := countingAPIServer(t)
	env := []string{"KUBECONFIG=" + kubeconfig}
	args := func(id string) []string {
		return append([]string{"-registry", registry, "-database", dsn, "-id", id}, storyFlags...)
	}

	a := proctest.Start(t, env, managerBin, args("a")...)
	termA := atoi(t, a.Wait(t, regexp.MustCompile(`leading term=(\d+)`))[1])
	a.Wait(t, regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, termA)))
	if !strings.Contains(a.Out(), "kube-apiserver http://127.0.0.1:") {
		t.Fatalf("the manager did not take the test's kubeconfig:\n%s", a.Out())
	}

	b := proctest.Start(t, env, managerBin, args("b")...)
	b.Wait(t, regexp.MustCompile(`started id=b`))
	// While a renews, b stays a candidate: a keeps writing, b never leads.
	n := len(accepted(a.Out(), termA))
	a.WaitAll(t, regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, termA)), n+10)
	if strings.Contains(b.Out(), "leading") {
		t.Fatalf("b leads while a renews:\n%s", b.Out())
	}

	a.Signal(t, syscall.SIGSTOP)
	time.Sleep(100 * time.Millisecond) // a's last lines reach the buffer
	beforeThaw := len(accepted(a.Out(), termA))
	termB := atoi(t, b.Wait(t, regexp.MustCompile(`leading term=(\d+)`))[1])
	if termB <= termA {
		t.Fatalf("b leads at term %d, not above a's %d", termB, termA)
	}
	b.Wait(t, regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, termB)))

	a.Signal(t, syscall.SIGCONT)
	select {
	case <-a.Done():
	case <-time.After(proctest.WaitMax):
		t.Fatal("the thawed manager did not stop")
	}
	if code := a.Cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(a.Err(), "leader election lost") {
		t.Fatalf("the thawed manager exited %d without \"leader election lost\"", code)
	}
	if after := len(accepted(a.Out(), termA)); after != beforeThaw {
		t.Fatalf("the thawed manager wrote %d more rows at its old term %d", after-beforeThaw, termA)
	}
	b.WaitAll(t, regexp.MustCompile(fmt.Sprintf(`wrote n=\d+ term=%d outcome=ACCEPTED`, termB)), 3)

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
