// Package redistest gives tests a real, throwaway redis-server: one per
// test binary, started on first use on a free loopback port with no
// persistence (--save "" --appendonly no), and stopped when the binary
// exits (call Main from TestMain; the kernel also stops it if the binary
// dies, through Pdeathsig). FENCEGATE_TEST_REDIS_ADDR points the tests at
// an existing server instead. Tests share the server and keep apart by
// key prefix (Prefix).
//
// Without redis-server or an address the tests skip with a loud message,
// unless FENCEGATE_REQUIRE_REDIS=1 (CI), which turns the skip into a
// failure.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Environment variables.
const (
	EnvAddr    = "FENCEGATE_TEST_REDIS_ADDR" // use this server instead of starting one
	EnvRequire = "FENCEGATE_REQUIRE_REDIS"   // "1": a missing redis-server fails the test
	EnvBin     = "FENCEGATE_TEST_REDIS_BIN"  // the redis-server binary (default: PATH)
)

// Limits.
const (
	StartTimeout    = 20 * time.Second // server start until PING answers
	ShutdownTimeout = 10 * time.Second
	startAttempts   = 3 // a free port can be taken between probe and bind
)

var (
	once    sync.Once
	shared  *server
	addr    string
	initErr error
	seq     atomic.Uint64
)

var errNoRedis = errors.New("no redis-server: not in PATH and " + EnvAddr + " unset")

// Main runs m and then stops the server if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops the shared server if one was started: for a TestMain that
// runs m through another package's Main (pgtest.Main) and calls Stop
// after it.
func Stop() {
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "redistest:", err)
		}
		shared = nil
	}
}

// Addr returns the server's host:port, starting it on first use. It skips
// t loudly when redis-server is unavailable, or fails it when
// EnvRequire=1.
func Addr(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if a := os.Getenv(EnvAddr); a != "" {
			addr = a
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		shared, initErr = start(ctx)
		if initErr == nil {
			addr = shared.addr
		}
	})
	if initErr != nil {
		if errors.Is(initErr, errNoRedis) && os.Getenv(EnvRequire) != "1" {
			t.Skipf("redistest: *** SKIPPING REDIS TESTS: %v. Install redis-server or set %s; set %s=1 to make this a failure ***", initErr, EnvAddr, EnvRequire)
		}
		t.Fatalf("redistest: redis-server required but unavailable: %v", initErr)
	}
	return addr
}

// Client returns a client of the shared server, closed when t ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: Addr(t)})
	t.Cleanup(func() { c.Close() })
	return c
}

// NewServer starts a server of t's own with extra arguments (for example
// "--replicaof", host, port), stopped when t ends, and returns its
// address. It needs the redis-server binary even when EnvAddr is set.
func NewServer(t testing.TB, extra ...string) string {
	t.Helper()
	Addr(t) // skip or fail as for the shared server
	bin, err := binary()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	var s *server
	for range startAttempts {
		if s, err = startOn(ctx, bin, extra...); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { s.stop() })
	return s.addr
}

// Prefix returns a key prefix no other caller in this process gets.
func Prefix() string { return fmt.Sprintf("t%d-%d:", os.Getpid(), seq.Add(1)) }

// server is one running redis-server.
type server struct {
	cmd    *exec.Cmd
	addr   string
	dir    string
	exited chan struct{}
}

func binary() (string, error) {
	if bin := os.Getenv(EnvBin); bin != "" {
		return bin, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errNoRedis
	}
	return p, nil
}

func start(ctx context.Context) (*server, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	for range startAttempts {
		var s *server
		if s, err = startOn(ctx, bin); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// startOn starts the server on a port that was free a moment ago.
func startOn(ctx context.Context, bin string, extra ...string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fencegate-redis-")
	if err != nil {
		return nil, err
	}
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer close(s.exited)
		runtime.LockOSThread() // never unlocked: Pdeathsig is tied to this thread
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning"}
		s.cmd = exec.Command(bin, append(args, extra...)...)
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := s.cmd.Start(); err != nil {
			started <- fmt.Errorf("redistest: %s: %w", bin, err)
			return
		}
		started <- nil
		s.cmd.Wait()
	}()
	if err := <-started; err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) waitReady(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("redistest: redis-server exited during start: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("redistest: redis-server not ready: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *server) stop() error {
	var err error
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(ShutdownTimeout):
			s.cmd.Process.Kill()
			err = fmt.Errorf("redis-server did not stop within %s; killed", ShutdownTimeout)
		}
	}
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
