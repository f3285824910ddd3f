// This file proves the client scenarios (lost acquire response, lost
// renewal, pause past TTL, each MUTATION_UNKNOWN branch with a real gate on
// SQLite) hold with the registry on a real embedded etcd. It lives with
// the kit (a test of its own package, so nothing else links an etcd
// server); client/scenarios_test.go runs them on the memory store.
package clienttest_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcdstore"
	"github.com/fencegate/fencegate/testkit/clienttest"
)

func TestScenariosOnEmbeddedEtcd(t *testing.T) {
	dir := t.TempDir()
	e, err := etcdstore.StartEmbedded(context.Background(), dir, etcdstore.EmbeddedOptions{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var seq atomic.Int64
	clienttest.RunScenarios(t, func(testing.TB) registry.Store {
		return etcdstore.New(c, fmt.Sprintf("/client-%d-%d/", os.Getpid(), seq.Add(1)))
	})
}
