package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
)

// cluster is one running throwaway PostgreSQL.
type cluster struct {
	bin  string // directory holding initdb, pg_ctl
	dir  string // temp dir: data/, the socket, the log
	cred *syscall.Credential
}

// findBinDir looks for initdb and pg_ctl in PATH, then in Debian's
// /usr/lib/postgresql/<version>/bin, newest version first.
func findBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
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
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", errNoPostgres
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// startCluster runs initdb and pg_ctl start. PostgreSQL refuses to run as
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
	// fsync stays on so benchmarks with synchronous_commit=on measure real
	// commits; tests that do not care set synchronous_commit=off per
	// connection.
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c max_connections=200 -c shared_buffers=64MB -c fsync=on", dir)
	if err := c.run(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	return c, nil
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

// stop shuts the server down immediately and deletes its files.
func (c *cluster) stop() error {
	err := c.run(context.Background(), "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	if rerr := os.RemoveAll(c.dir); err == nil {
		err = rerr
	}
	return err
}
