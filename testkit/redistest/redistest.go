// Package redistest gives tests a real, throwaway redis-server: one per
// test binary, started on first use on a free loopback port with the
// persistence redisgate accepts for enforce mode (Durable: appendonly
// yes, appendfsync always; its data directory on /dev/shm when there is
// one, so that the fsync of every write costs little), and stopped when
// the binary exits (call Main from TestMain; the kernel also stops it if
// the binary dies, through Pdeathsig). FENCEGATE_TEST_REDIS_ADDR points
// the tests at an existing server instead. Tests share the server and
// keep apart by key prefix (Prefix).
//
// A test that needs a server of its own — another persistence
// configuration, a replica, a server to kill with SIGKILL and start
// again on the same port and data directory — calls StartServer.
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
	"sync"
	"sync/atomic"
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
			addr = shared.p.addr
		}
	})
	if initErr != nil {
		unavailable(t, initErr)
	}
	return addr
}

// unavailable skips t loudly when err is errNoRedis, unless EnvRequire=1,
// and fails it otherwise.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, errNoRedis) && os.Getenv(EnvRequire) != "1" {
		t.Skipf("redistest: *** SKIPPING REDIS TESTS: %v. Install redis-server or set %s; set %s=1 to make this a failure ***", err, EnvAddr, EnvRequire)
	}
	t.Fatalf("redistest: redis-server required but unavailable: %v", err)
}

// Client returns a client of the shared server, closed when t ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: Addr(t)})
	t.Cleanup(func() { c.Close() })
	return c
}

// Prefix returns a key prefix no other caller in this process gets.
func Prefix() string { return fmt.Sprintf("t%d-%d:", os.Getpid(), seq.Add(1)) }

// server is the shared redis-server: one process and the data directory
// it owns.
type server struct {
	p   *process
	dir string
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
	dir, err := os.MkdirTemp(fastDir(), "fencegate-redis-")
	if err != nil {
		return nil, err
	}
	for range startAttempts {
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		var p *process
		if p, err = launch(ctx, bin, port, dir, Durable); err == nil {
			return &server{p: p, dir: dir}, nil
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

// fastDir is where the shared server keeps its data: /dev/shm (memory,
// where fsync costs nothing) when it exists, else the temporary
// directory. The configuration is Durable either way.
func fastDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return ""
}

func (s *server) stop() error {
	err := s.p.stop()
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
