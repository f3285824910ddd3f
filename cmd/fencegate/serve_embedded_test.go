//go:build unix

// This file proves that serve on its embedded default, whose registry
// calls the member in process, commits to the member its start line
// names: a gRPC client of that endpoint (what etcdctl is) reads the
// record of a lock taken over HTTP.
package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/registry/etcdstore"
	"github.com/fencegate/fencegate/wire"
)

func TestServeEmbeddedMemberIsTheOneItNames(t *testing.T) {
	p, url := serveProc(t)
	// stderr is copied apart from stdout: the line may trail the listen line.
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m = embeddedLine.FindStringSubmatch(p.err.String())
	}
	if m == nil {
		t.Fatalf("serve's stderr names no embedded etcd endpoint:\n%s", p.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := httpclient.NewClient(url, httpclient.WithBearerToken(serveToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, wire.AcquireRequest{Resource: "etcdctl/1", OperationID: "op", OperationClass: "test", RequestID: "r1", TTLMs: 30_000}); err != nil {
		t.Fatal(err)
	}
	ec, err := etcdstore.Dial(ctx, etcdstore.ClientConfig{Endpoints: strings.Split(m[1], ",")}, etcdstore.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	resp, err := ec.Get(ctx, etcdstore.DefaultPrefix+"r/etcdctl/1")
	if err != nil {
		t.Fatalf("read over gRPC at %s: %v", m[1], err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("the member at %s holds no record of the lock serve granted (%d keys)", m[1], len(resp.Kvs))
	}
}
