// This file proves Dial against real servers: with digest auth the store's
// nodes are the user's alone (a wrong password or no auth fails at Dial,
// with its cause); over TLS with a client certificate the registry works,
// and a wrong CA, a missing client certificate or plain TCP on the secure
// port fail at Dial; and Check refuses configurations that can never
// connect before dialling.
package zkstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/testkit/zktest"
	"github.com/fencegate/fencegate/wire"
)

func TestDialDigestAuth(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	root := fmt.Sprintf("/auth-%d", rootSeq.Add(1))
	cfg := ClientConfig{Servers: []string{srv.Addr}, Username: "fencegate", Password: "right"}
	conn, err := Dial(ctx, cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := New(ctx, conn, root, cfg.ACL())
	if err != nil {
		t.Fatal(err)
	}
	reg := storetest.NewRegistry(t, s, nil)
	if _, err := reg.Acquire(ctx, "worker", wire.AcquireRequest{Resource: "auth/1", OperationID: "op", OperationClass: "c", RequestID: "r1", TTLMs: 5000}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]ClientConfig{
		"wrong password": {Servers: cfg.Servers, Username: "fencegate", Password: "wrong", DialTimeout: 3 * time.Second},
		"no auth":        {Servers: cfg.Servers, DialTimeout: 3 * time.Second},
	} {
		conn, err := Dial(ctx, c, root)
		if err == nil {
			conn.Close()
			t.Fatalf("%s: Dial succeeded", name)
		}
		if !strings.Contains(err.Error(), "not authenticated") {
			t.Fatalf("%s: %v, want the server's refusal", name, err)
		}
	}
}

func TestDialTLS(t *testing.T) {
	// Not in parallel with the ensembles' tests: under their JVMs' start a
	// TLS session could miss Dial's 5 s (seen at load 28); its refused
	// dials below run at once.
	server(t)
	srv := zktest.Start(t, zktest.Options{TLS: true})
	ctx := context.Background()
	cfg := ClientConfig{Servers: []string{srv.TLSAddr}, CACertFile: srv.PKI.CAFile, CertFile: srv.PKI.ClientCert, KeyFile: srv.PKI.ClientKey}
	conn, err := Dial(ctx, cfg, DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := New(ctx, conn, DefaultRoot, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Commit(ctx, registry.Write{Resource: "tls/1", Record: &lockstate.Record{HighestFence: 1}}); err != nil || !res.OK {
		t.Fatalf("commit over TLS: %+v %v", res, err)
	}
	for _, c := range []struct {
		name   string
		change func(*ClientConfig)
		want   string
	}{
		{"unknown CA", func(c *ClientConfig) { c.CACertFile = srv.PKI.OtherCAFile }, "certificate signed by unknown authority"},
		{"no client certificate", func(c *ClientConfig) { c.CertFile, c.KeyFile = "", "" }, "no session"},
		{"plain TCP to the secure port", func(c *ClientConfig) { *c = ClientConfig{Servers: c.Servers} }, "no session"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each dials with its own copy of the config; several wait out DialTimeout
			bad := cfg
			c.change(&bad)
			bad.DialTimeout = 2 * time.Second
			conn, err := Dial(ctx, bad, DefaultRoot)
			if err == nil {
				conn.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
		})
	}
}

func TestClientConfigCheck(t *testing.T) {
	for _, c := range []struct {
		cfg  ClientConfig
		want string
	}{
		{ClientConfig{}, "no servers"},
		{ClientConfig{Servers: []string{"zk-1"}}, "want host:port"},
		{ClientConfig{Servers: []string{"zk-1:2181/chroot"}}, "chroot"},
		{ClientConfig{Servers: []string{"zk-1:2181"}, CertFile: "c.pem"}, "go together"},
		{ClientConfig{Servers: []string{"zk-1:2181"}, Username: "u"}, "both a user and a password"},
		{ClientConfig{Servers: []string{"zk-1:2181"}, Username: "u:x", Password: "p"}, "':'"},
		{ClientConfig{Servers: []string{"zk-1:2181", "zk-2:2181"}, Username: "u", Password: "p"}, ""},
	} {
		err := c.cfg.Check()
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.cfg, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadClientConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
