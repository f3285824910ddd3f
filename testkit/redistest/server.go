package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Persistence configurations, as redis-server arguments, for StartServer.
// Each names what a restart of the process keeps; the redisgate
// documentation (docs/adapters.md) says what each keeps across a crash
// of the machine, which a test cannot do.
var (
	// Durable: the append-only file, fsynced before every reply. The
	// configuration redisgate accepts for enforce mode.
	Durable = []string{"--appendonly", "yes", "--appendfsync", "always", "--save", ""}
	// AOFEverysec: the append-only file, fsynced once a second.
	AOFEverysec = []string{"--appendonly", "yes", "--appendfsync", "everysec", "--save", ""}
	// AOFNoFsync: the append-only file, fsynced when the kernel likes.
	AOFNoFsync = []string{"--appendonly", "yes", "--appendfsync", "no", "--save", ""}
	// RDBOnly: snapshots after an hour with a change, no append-only
	// file: a restart loses every write since the last snapshot.
	RDBOnly = []string{"--appendonly", "no", "--save", "3600 1"}
	// Unpersisted: nothing on disk (--save "" --appendonly no, what
	// `fencegate demo --resource redis` ran before it ran Durable); a
	// restart loses everything.
	Unpersisted = []string{"--appendonly", "no", "--save", ""}
)

// Server is a redis-server of one test's own, on a loopback port and a
// data directory it keeps across Kill and Restart.
type Server struct {
	bin  string
	port int
	dir  string
	args []string
	p    *process // nil while killed
}

// StartServer starts a server of t's own with args (a persistence
// configuration and any other options), stopped when t ends. It needs
// the redis-server binary even when EnvAddr is set; without it, it skips
// or fails t as Addr does.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		unavailable(t, err)
	}
	s := &Server{bin: bin, dir: t.TempDir(), args: slices.Clone(args)}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	for range startAttempts { // a free port can be taken between probe and bind
		if s.port, err = freePort(); err != nil {
			break
		}
		if s.p, err = launch(ctx, bin, s.port, s.dir, s.args); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if s.p != nil {
			s.p.stop()
		}
	})
	return s
}

// Addr is the server's host:port; it stays the same across Restart.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Dir is the server's data directory.
func (s *Server) Dir() string { return s.dir }

// Kill stops the server with SIGKILL, as a crash would: no shutdown, no
// last save; what the kernel already holds of its files stays.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if s.p == nil {
		t.Fatal("redistest: Kill of a server that is not running")
	}
	s.p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.p.exited:
	case <-time.After(ShutdownTimeout):
		t.Fatalf("redistest: redis-server %s did not die within %s of SIGKILL", s.Addr(), ShutdownTimeout)
	}
	s.p = nil
}

// Restart starts the killed server again on the same port, data
// directory and arguments, and waits until it answers (after loading
// whatever its persistence kept).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.p != nil {
		t.Fatal("redistest: Restart of a running server (Kill it first)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	p, err := launch(ctx, s.bin, s.port, s.dir, s.args)
	if err != nil {
		t.Fatalf("redistest: restart on %s: %v", s.Addr(), err)
	}
	s.p = p
}

// process is one running redis-server.
type process struct {
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}
}

// launch starts redis-server on port with its data in dir and args after
// the common ones, and waits until it answers PING.
func launch(ctx context.Context, bin string, port int, dir string, args []string) (*process, error) {
	p := &process{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer close(p.exited)
		runtime.LockOSThread() // never unlocked: Pdeathsig is tied to this thread
		common := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning"}
		p.cmd = exec.Command(bin, append(common, args...)...)
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := p.cmd.Start(); err != nil {
			started <- fmt.Errorf("redistest: %s: %w", bin, err)
			return
		}
		started <- nil
		p.cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *process) waitReady(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("redistest: redis-server exited during start: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("redistest: redis-server not ready: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop ends the process with SIGTERM (SIGKILL after ShutdownTimeout).
func (p *process) stop() error {
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(ShutdownTimeout):
		p.cmd.Process.Kill()
		return fmt.Errorf("redis-server did not stop within %s; killed", ShutdownTimeout)
	}
}

// CopyData copies the server's data directory as it is now into a new
// directory of t's and returns it: with Durable, every write answered so
// far is in it.
func (s *Server) CopyData(t testing.TB) string {
	t.Helper()
	to := t.TempDir()
	if err := os.CopyFS(to, os.DirFS(s.dir)); err != nil {
		t.Fatalf("redistest: copy %s: %v", s.dir, err)
	}
	return to
}

// ReplaceData makes the killed server's data directory a copy of from
// (a CopyData of an earlier moment): restarted, it holds what it held
// then, as after a crash of the machine that lost the writes since.
func (s *Server) ReplaceData(t testing.TB, from string) {
	t.Helper()
	if s.p != nil {
		t.Fatal("redistest: ReplaceData of a running server (Kill it first)")
	}
	if err := os.RemoveAll(s.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(s.dir, os.DirFS(from)); err != nil {
		t.Fatalf("redistest: copy %s: %v", from, err)
	}
}
