// This file runs the read/write lock stress (testkit/rwstress) on a real
// etcd: readers and writers (some downgrading) from many goroutines on
// two replicas, every committed version of the lock's record checked
// (never a writer beside a reader, no reader past a queued writer, none
// before a downgrade's statements expired), the downgrades' fences kept
// and every wait served. The negative control (a downgrade in two steps)
// is in the registry package's test, on the memory store.
package etcdstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/rwstress"
)

func TestReadWriteLockConcurrentOnEtcd(t *testing.T) {
	prefix := fmt.Sprintf("/test-%d/", prefixSeq.Add(1))
	var stores []registry.Store
	for range 2 {
		stores = append(stores, New(testClient, prefix))
	}
	regs := append(rwstress.Registries(t, stores[0], 1), rwstress.Registries(t, stores[1], 1)...)
	res := rwstress.Run(t, stores[0], regs, rwstress.Options{Workers: 10, Duration: 3 * time.Second, WaitMs: 15_000, HoldMax: 2 * time.Millisecond})
	t.Logf("reads %d (shared %d), writes %d, downgrades %d, unserved %d, versions %d", res.Reads, res.Shared, res.Writes, res.Downgrades, res.Unserved, res.Versions)
	for _, v := range res.Violations {
		t.Error(v)
	}
	if res.Unserved > 0 {
		t.Errorf("%d waits ran out", res.Unserved)
	}
	if res.Reads < 20 || res.Writes < 10 || res.Shared == 0 || res.Downgrades == 0 || res.Versions < 40 {
		t.Errorf("vacuous: %+v", res)
	}
}
