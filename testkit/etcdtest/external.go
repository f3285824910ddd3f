// Package etcdtest starts a real, external etcd server (the `etcd` binary
// of Debian's etcd-server package) with TLS, client certificates and
// authentication enabled, for tests of serve's --etcd-* flags. It is a
// test helper: it skips the test when the binary is missing, unless
// FENCEGATE_REQUIRE_ETCD=1 (CI), which turns the skip into a failure.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/registry/etcdstore"
)

// Environment variables.
const (
	EnvRequire = "FENCEGATE_REQUIRE_ETCD" // "1": a missing etcd binary fails the test
	EnvBinary  = "FENCEGATE_TEST_ETCD"    // path of the etcd binary (default: PATH, /usr/bin/etcd)
)

// Credentials of the server's users.
const (
	RootPassword = "root-password-for-tests"
	User         = "fencegate"
	Password     = "fencegate-password-for-tests"
	Prefix       = "/fencegate/" // the fencegate user's role grants readwrite here only
)

// StartTimeout bounds the server's start.
const StartTimeout = 30 * time.Second

// External is one running etcd.
type External struct {
	Endpoint string // https://127.0.0.1:PORT
	PKI      *PKI
}

// Config is the etcdstore.ClientConfig that reaches e as the fencegate user.
func (e *External) Config() etcdstore.ClientConfig {
	return etcdstore.ClientConfig{Endpoints: []string{e.Endpoint}, CACertFile: e.PKI.CAFile,
		CertFile: e.PKI.ClientCert, KeyFile: e.PKI.ClientKey, Username: User, Password: Password}
}

func binary() string {
	if p := os.Getenv(EnvBinary); p != "" {
		return p
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	return "/usr/bin/etcd"
}

// Start runs etcd with TLS and client-certificate authentication, adds
// root and the fencegate user (readwrite on Prefix only), enables auth,
// and stops it when t ends.
func Start(t testing.TB) *External {
	t.Helper()
	bin := binary()
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("etcdtest: no etcd binary at %s and %s=1 (apt-get install etcd-server)", bin, EnvRequire)
		}
		t.Skipf("etcdtest: SKIPPING: no etcd binary (%s); apt-get install etcd-server, or set %s", bin, EnvBinary)
	}
	dir := t.TempDir()
	pki, err := NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Free ports are picked, then bound by etcd: another process may take
	// one in between, so a start that fails to bind is retried.
	for try := 1; ; try++ {
		e, err := start(t, bin, dir, pki, try)
		if err == nil {
			return e
		}
		if try == startTries {
			log, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("etcd-%d.log", try)))
			t.Fatalf("etcdtest: %v\n%s", err, log)
		}
	}
}

// startTries bounds the attempts at binding free ports.
const startTries = 5

func start(t testing.TB, bin, dir string, pki *PKI, try int) (*External, error) {
	client, peer := freePort(t), freePort(t)
	e := &External{Endpoint: "https://" + client, PKI: pki}
	cmd := exec.Command(bin, "--name", "test", "--data-dir", filepath.Join(dir, fmt.Sprintf("data-%d", try)),
		"--listen-client-urls", e.Endpoint, "--advertise-client-urls", e.Endpoint,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "test=http://"+peer,
		"--cert-file", pki.ServerCert, "--key-file", pki.ServerKey, "--trusted-ca-file", pki.CAFile, "--client-cert-auth",
		"--unsafe-no-fsync", "--logger", "zap", "--log-outputs", filepath.Join(dir, fmt.Sprintf("etcd-%d.log", try)))
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcdtest: start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	if err := e.setup(exited); err != nil {
		stop()
		return nil, err
	}
	t.Cleanup(stop)
	return e, nil
}

// setup waits for the server, then creates users and roles and enables
// auth, over a client-certificate connection without a user.
func (e *External) setup(exited <-chan struct{}) error {
	cfg := e.Config()
	cfg.Username, cfg.Password = "", ""
	var cli *clientv3.Client
	var err error
	deadline := time.Now().Add(StartTimeout)
	for {
		if cli, err = etcdstore.Dial(context.Background(), withTimeout(cfg, time.Second), Prefix); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd not ready after %s: %w", StartTimeout, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("etcd exited before it was ready: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", RootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, User); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, User, Prefix, clientv3.GetPrefixRangeEnd(Prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, User, Password); return err },
		func() error { _, err := cli.UserGrantRole(ctx, User, User); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("auth setup step %d: %w", i+1, err)
		}
	}
	return nil
}

func withTimeout(c etcdstore.ClientConfig, d time.Duration) etcdstore.ClientConfig {
	c.DialTimeout = d
	return c
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
