//go:build unix

// Proves examples/python's quick start as a reader meets it: the three
// command lines of its README, run as printed by sh from a copy of the
// repository's root (every top-level entry linked, so the commands'
// writes — ./fencegate, gate.key, dev-registry — land in the copy), with
// only the database's address changed to a real PostgreSQL's: setup.sh
// builds the binary and sets the database up, `serve --dev --key
// gate.key` signs with the relative key, and the worker on the Python
// client from the checkout (PYTHONPATH=clients/python), identity dev,
// with no fencegate on PATH, writes its row through the gate.
package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

// The README's database addresses, replaced by the test's.
const (
	readmeAdminDB  = "postgres://postgres@localhost/app"
	readmeWorkerDB = "postgres://report_worker@localhost/app"
)

var pythonQuickStart = regexp.MustCompile("(?s)<!-- python quick start: [^>]*-->\n```sh\n(.*?)```")

func TestPythonExampleQuickStartAsPrinted(t *testing.T) {
	t.Parallel()
	if err := exec.Command(python, "-c", "import psycopg").Run(); err != nil {
		if os.Getenv("FENCEGATE_REQUIRE_PSYCOPG") == "1" {
			t.Fatalf("python3-psycopg required: %v", err)
		}
		t.Skipf("*** SKIPPING: %s cannot import psycopg (apt-get install python3-psycopg) ***", python)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "examples", "python", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := pythonQuickStart.FindStringSubmatch(string(readme))
	if m == nil {
		t.Fatal("examples/python/README.md: no quick start block")
	}
	lines := strings.Split(strings.TrimSpace(m[1]), "\n")
	if len(lines) > 3 {
		t.Fatalf("the quick start is %d commands, want at most three:\n%s", len(lines), m[1])
	}
	admin := dsnURL(t, pgtest.NewDatabase(t))
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], readmeWorkerDB, pgtest.WithParam(admin, "user", "report_worker"))
		lines[i] = strings.ReplaceAll(lines[i], readmeAdminDB, admin)
	}
	root := repoCopy(t)
	waitPortFree(t, "127.0.0.1:7420")
	// The reader's python3 is one with psycopg (the README's first
	// requirement): Debian's, first on PATH; and no fencegate on PATH.
	pyDir := t.TempDir()
	if err := os.Symlink(python, filepath.Join(pyDir, "python3")); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + pyDir + string(filepath.ListSeparator) + pathWithout(os.Getenv("PATH"), "fencegate")}
	if out, err := shell(t, root, env, lines[0]).run(3 * time.Minute); err != nil {
		t.Fatalf("%s: %v\n%s", lines[0], err, out)
	}
	serve := shell(t, root, env, "exec "+lines[1])
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); !listenLine.MatchString(serve.out.String()); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not listening:\n%s", lines[1], serve.out)
		}
	}
	worker, err := shell(t, root, env, lines[2]).run(time.Minute)
	if err != nil || !strings.Contains(worker, "outcome ACCEPTED") {
		t.Fatalf("%s: %v\n%s\nserve:\n%s", lines[2], err, worker, serve.out)
	}
}

// shellCmd is a command line run by sh in a process group of its own,
// killed with the group when the test ends.
type shellCmd struct {
	*exec.Cmd
	out *syncBuffer
}

// shell prepares line for sh in dir, env added to the test's environment.
func shell(t *testing.T, dir string, env []string, line string) *shellCmd {
	c := &shellCmd{Cmd: exec.Command("sh", "-c", line), out: &syncBuffer{}}
	c.Dir, c.Env = dir, append(os.Environ(), env...)
	c.Stdout, c.Stderr = c.out, c.out
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t.Cleanup(func() {
		if c.Process != nil {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
	})
	return c
}

// run runs the line to its end, at most d, and returns its output.
func (c *shellCmd) run(d time.Duration) (string, error) {
	if err := c.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		c.Process = nil // waited for
		return c.out.String(), err
	case <-time.After(d):
		return c.out.String(), fmt.Errorf("still running after %s", d)
	}
}

// dsnURL is a pgtest connection string as a postgres:// URL (the README
// writes one; a keyword string has spaces a shell line would split).
func dsnURL(t *testing.T, dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return dsn
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(dsn) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("pgtest DSN %q: want key=value words", dsn)
		}
		kv[k] = v
	}
	q := url.Values{}
	for k, v := range kv {
		if k != "user" && k != "dbname" && k != "password" {
			q.Set(k, v)
		}
	}
	u := url.URL{Scheme: "postgres", User: url.User(kv["user"]), Path: "/" + kv["dbname"], RawQuery: q.Encode()}
	if p, ok := kv["password"]; ok {
		u.User = url.UserPassword(kv["user"], p)
	}
	return u.String()
}

// repoCopy is a directory standing for the repository's root: a link to
// each of its top-level entries.
func repoCopy(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		switch e.Name() {
		case "fencegate", "gate.key", "dev-registry", ".git":
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// pathWithout is PATH without the directories that hold a file named
// name: the reader after the quick start has no fencegate on PATH.
func pathWithout(path, name string) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if _, err := os.Stat(filepath.Join(d, name)); err != nil {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// waitPortFree waits up to a minute for addr to be free (serve --dev's
// fixed address, which the examples module's tests use too).
func waitPortFree(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s stays busy: the README's serve --dev cannot listen there: %v", addr, err)
		}
	}
}
