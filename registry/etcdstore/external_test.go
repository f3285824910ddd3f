// Proves etcdstore.Dial against a real external etcd (Debian's etcd-server
// binary) with TLS, client certificates and authentication enabled: the
// registry acquires and releases through it as the fencegate user, whose
// keys land under its prefix; and each missing or wrong credential (CA,
// client certificate, password, a prefix the user's role does not grant,
// plain HTTP) fails at Dial with its cause, not at the first acquire.
package etcdstore_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcdstore"
	"github.com/fencegate/fencegate/testkit/etcdtest"
	"github.com/fencegate/fencegate/wire"
)

func TestExternalEtcdTLSAndAuth(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	ctx := context.Background()
	cli, err := etcdstore.Dial(ctx, e.Config(), etcdtest.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	key, err := grant.GenerateKey(grant.AlgEd25519, "ext", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(etcdstore.New(cli, etcdtest.Prefix), registry.DefaultConfig(1), clock.System{}, key)
	if err != nil {
		t.Fatal(err)
	}
	is, err := reg.Acquire(ctx, "worker-1", wire.AcquireRequest{Resource: "ext/one", OperationID: "op", OperationClass: "settle", RequestID: "r-1", TTLMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Release(ctx, "worker-1", "ext/one", is.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	got, err := cli.Get(ctx, etcdtest.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || got.Count == 0 {
		t.Fatalf("no registry keys under %s: %v", etcdtest.Prefix, err)
	}
}

// TestExternalEtcdCertificateCNIsTheUser: with client-certificate auth,
// etcd takes the certificate's CN ("fencegate") as the user when no
// password is given, so --etcd-user is optional there.
func TestExternalEtcdCertificateCNIsTheUser(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	cfg := e.Config()
	cfg.Username, cfg.Password = "", ""
	cli, err := etcdstore.Dial(context.Background(), cfg, etcdtest.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), "/not-granted", "x"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("a write outside the role's prefix: %v, want permission denied", err)
	}
}

func TestExternalEtcdRefusesBadCredentials(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	for _, c := range []struct {
		name   string
		change func(*etcdstore.ClientConfig) string // returns the prefix
		want   string
	}{
		{"wrong password", func(c *etcdstore.ClientConfig) string { c.Password = "nope"; return etcdtest.Prefix }, "authentication failed"},
		{"prefix the role does not grant", func(c *etcdstore.ClientConfig) string { return "/other/" }, "permission denied"},
		{"unknown CA", func(c *etcdstore.ClientConfig) string { c.CACertFile = e.PKI.OtherCAFile; return etcdtest.Prefix }, "certificate signed by unknown authority"},
		{"no client certificate", func(c *etcdstore.ClientConfig) string { c.CertFile, c.KeyFile = "", ""; return etcdtest.Prefix }, "certificate"},
		{"client certificate of another CA", func(c *etcdstore.ClientConfig) string {
			c.CertFile, c.KeyFile = e.PKI.OtherClient, e.PKI.OtherClientKey
			return etcdtest.Prefix
		}, "certificate"},
		{"plain http", func(c *etcdstore.ClientConfig) string {
			c.Endpoints = []string{strings.Replace(e.Endpoint, "https://", "http://", 1)}
			c.CACertFile, c.CertFile, c.KeyFile = "", "", ""
			return etcdtest.Prefix
		}, "deadline exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each dials with its own copy of the config; several wait out DialTimeout
			cfg := e.Config()
			cfg.DialTimeout = 2 * time.Second
			prefix := c.change(&cfg)
			cli, err := etcdstore.Dial(context.Background(), cfg, prefix)
			if err == nil {
				cli.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
		})
	}
}
