package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// cluster is one running throwaway PostgreSQL.
type cluster struct {
	bin    string // directory holding initdb, postgres
	dir    string // temp dir: data/, the socket, the log
	cred   *syscall.Credential
	server *exec.Cmd
	exited chan struct{} // closed when the server process has exited
}

// findBinDir looks for initdb and postgres in EnvBinDir, else in PATH, then
// in Debian's /usr/lib/postgresql/<version>/bin, newest version first.
func findBinDir() (string, error) {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err != nil {
			return "", fmt.Errorf("%w (%s=%s: %v)", errNoPostgres, EnvBinDir, dir, err)
		}
		return dir, nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errNoPostgres
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// startCluster runs initdb and starts the server. PostgreSQL refuses to run as
// root, so as root both run as the "postgres" user, which owns the dir.
func startCluster(ctx context.Context) (*cluster, error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fencegate-pg-")
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		if c.cred, err = unprivileged(dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := c.run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.startServer(ctx); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		c.stop()
		return nil, fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	return c, nil
}

// startServer runs postgres directly (not through pg_ctl, which would
// daemonize it) so the kernel stops it if the test binary dies without
// cleaning up: Pdeathsig sends SIGQUIT (immediate shutdown) when the
// thread that started it exits, and that thread stays locked until the
// server exits. fsync stays on so benchmarks with synchronous_commit=on
// measure real commits; tests set synchronous_commit=off per connection.
func (c *cluster) startServer(ctx context.Context) error {
	logf, err := os.Create(filepath.Join(c.dir, "log"))
	if err != nil {
		return err
	}
	c.exited = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		defer close(c.exited)
		defer logf.Close()
		runtime.LockOSThread() // never unlocked: Pdeathsig is tied to this thread
		cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", filepath.Join(c.dir, "data"), "-k", c.dir,
			"-c", "listen_addresses=", "-c", "max_connections=200", "-c", "shared_buffers=64MB", "-c", "fsync=on")
		cmd.Stdout, cmd.Stderr, cmd.Dir = logf, logf, c.dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("pgtest: postgres: %w", err)
			return
		}
		c.server = cmd
		started <- nil
		cmd.Wait()
	}()
	if err := <-started; err != nil {
		return err
	}
	return waitReady(ctx, c.dsn("postgres"), c.exited)
}

// waitReady polls until the server accepts connections.
func waitReady(ctx context.Context, dsn string, exited <-chan struct{}) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres exited during start: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres not ready: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// unprivileged returns the postgres user's credential and gives it dir.
func unprivileged(dir string) (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root and no 'postgres' user to run the server as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (c *cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Env = append(os.Environ(), "HOME="+c.dir)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgtest: %s: %w\n%s", name, err, out.String())
	}
	return nil
}

func (c *cluster) dsn(db string) string {
	return fmt.Sprintf("host=%s user=postgres dbname=%s sslmode=disable", c.dir, db)
}

// ShutdownTimeout bounds waiting for the server to exit at teardown.
const ShutdownTimeout = 30 * time.Second

// stop shuts the server down immediately (SIGQUIT) and deletes its files.
func (c *cluster) stop() error {
	var err error
	if c.server != nil {
		c.server.Process.Signal(syscall.SIGQUIT)
		select {
		case <-c.exited:
		case <-time.After(ShutdownTimeout):
			c.server.Process.Kill()
			err = fmt.Errorf("pgtest: postgres did not stop within %s; killed", ShutdownTimeout)
		}
	}
	if rerr := os.RemoveAll(c.dir); err == nil {
		err = rerr
	}
	return err
}
