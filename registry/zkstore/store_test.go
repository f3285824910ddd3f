// This file proves the ZooKeeper store passes the store conformance suite
// on a real ZooKeeper server (one per test process, shared by the tests,
// each store under its own root), and that names round-trip.
package zkstore

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/testkit/zktest"
)

var (
	testServer   *zktest.Server
	testConn     *zk.Conn
	testStartErr error
	rootSeq      atomic.Int64
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zkstore-test-")
	if err != nil {
		panic(err)
	}
	if testServer, testStartErr = zktest.New(dir, zktest.Options{}); testStartErr == nil {
		testConn, testStartErr = Dial(context.Background(), ClientConfig{Servers: []string{testServer.Addr}}, "/")
	}
	code := m.Run()
	if testConn != nil {
		testConn.Close()
	}
	if testServer != nil {
		_ = testServer.Stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// server returns the shared server, skipping (or failing, under
// FENCEGATE_REQUIRE_ZK=1) when it could not start.
func server(t testing.TB) *zktest.Server {
	t.Helper()
	if testStartErr != nil {
		zktest.SkipOrFail(t, testStartErr)
	}
	return testServer
}

// freshStore returns a store under a root no other test uses.
func freshStore(t testing.TB) *Store {
	server(t)
	s, err := New(context.Background(), testConn, fmt.Sprintf("/test-%d", rootSeq.Add(1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return freshStore(t) })
}

func TestNamesRoundTrip(t *testing.T) {
	for _, k := range []string{"", "a", "spiffe://x.org/w/1", "a.b", ".", "..", "%", "=", "é/\x00\xff", "zookeeper"} {
		n := nameOf(k)
		got, ok := keyOf(n)
		if !ok || got != k {
			t.Errorf("%q -> %q -> %q %v", k, n, got, ok)
		}
	}
	for _, bad := range []string{"a", "=%", "=%4", "=%zz", "=%4a"} {
		if _, ok := keyOf(bad); ok {
			t.Errorf("keyOf(%q) accepted", bad)
		}
	}
}
