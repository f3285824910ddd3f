// This file proves the etcd store passes the store conformance suite on a
// real embedded etcd, each subtest under its own key prefix.
package etcdstore

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
)

var (
	testEtcd   *Embedded
	testClient *clientv3.Client
	prefixSeq  atomic.Int64
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "etcdstore-test-")
	if err != nil {
		panic(err)
	}
	testEtcd, err = StartEmbedded(context.Background(), dir, EmbeddedOptions{UnsafeNoFsync: true})
	if err != nil {
		panic(err)
	}
	if testClient, err = testEtcd.Client(); err != nil {
		panic(err)
	}
	code := m.Run()
	for _, f := range benchCleanup {
		f()
	}
	testClient.Close()
	testEtcd.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freshStore returns a store under a prefix no other test uses.
func freshStore(t testing.TB) *Store {
	return New(testClient, fmt.Sprintf("/test-%d/", prefixSeq.Add(1)))
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return freshStore(t) })
}
