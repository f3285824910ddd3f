// Proves serve's --etcd-* flags against a real external etcd with TLS,
// client certificates and authentication enabled: the password from
// FENCEGATE_ETCD_PASSWORD or --etcd-password-file, grants issued and
// fences increasing through it; a wrong password or CA makes serve exit 1
// at start with the cause and the flags to check.
package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/etcdtest"
	"github.com/fencegate/fencegate/wire"
)

func TestServeExternalEtcdTLSAuth(t *testing.T) {
	e := etcdtest.Start(t)
	dir := t.TempDir()
	tok := writeTokenFile(t, dir)
	etcdFlags := []string{"--authz-open", "--etcd-endpoints", e.Endpoint, "--etcd-prefix", etcdtest.Prefix,
		"--etcd-cacert", e.PKI.CAFile, "--etcd-cert", e.PKI.ClientCert, "--etcd-key", e.PKI.ClientKey, "--etcd-user", etcdtest.User}

	t.Setenv("FENCEGATE_ETCD_PASSWORD", etcdtest.Password)
	data := filepath.Join(dir, "data")
	s := startServe(t, append([]string{"--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", tok}, etcdFlags...)...)
	c := s.client(t, filepath.Join(data, httpapi.BundleFileName))
	ctx := context.Background()
	var last uint64
	for i, op := range []string{"op-1", "op-2"} {
		is, err := c.Acquire(ctx, wire.AcquireRequest{Resource: "ext/serve", OperationID: op, OperationClass: "settle", RequestID: "r-" + op})
		if err != nil {
			t.Fatalf("acquire %d through the external etcd: %v\n%s", i, err, s.stderr)
		}
		if is.Grant.FenceToken <= last {
			t.Fatalf("fence %d after %d", is.Grant.FenceToken, last)
		}
		last = is.Grant.FenceToken
		if err := c.Release(ctx, "ext/serve", is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: %d\n%s", code, s.stderr)
	}

	pw := filepath.Join(dir, "etcd-password")
	if err := os.WriteFile(pw, []byte(etcdtest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FENCEGATE_ETCD_PASSWORD", "")
	os.Unsetenv("FENCEGATE_ETCD_PASSWORD")
	s = startServe(t, append([]string{"--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", tok, "--etcd-password-file", pw}, etcdFlags...)...)
	s.stop()

	for _, bad := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--etcd-password-file", writeFile(t, dir, "wrong", "nope\n")}, "authentication failed"},
		{[]string{"--etcd-password-file", pw, "--etcd-cacert", e.PKI.OtherCAFile}, "certificate signed by unknown authority"},
	} {
		args := append(append([]string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--token-file", tok}, etcdFlags...), bad.flags...)
		_, errOut, code := runCLI(args...)
		if code != 1 || !strings.Contains(errOut, bad.want) || !strings.Contains(errOut, "check --etcd-endpoints") {
			t.Errorf("%v: exit %d, stderr %q; want 1, %q and what to check", bad.flags, code, errOut, bad.want)
		}
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
