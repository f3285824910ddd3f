// This file runs the read/write lock stress (testkit/rwstress) on a real
// ZooKeeper server: readers and writers (some downgrading) from many
// goroutines on two replicas, each its own Store over one root; every
// committed version of the lock's record the watch delivers checked
// (never a writer beside a reader, no reader past a queued writer, none
// before a downgrade's statements expired), downgrades keeping their
// fence, every wait served. The negative control (a downgrade in two
// steps) is in the registry package's test, on the memory store.
package zkstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/rwstress"
)

func TestReadWriteLockConcurrentOnZooKeeper(t *testing.T) {
	server(t)
	root := fmt.Sprintf("/test-%d", rootSeq.Add(1))
	var regs []*registry.Registry
	var first registry.Store
	for range 2 {
		s, err := New(context.Background(), testConn, root, nil)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = s
		}
		regs = append(regs, rwstress.Registries(t, s, 1)...)
	}
	res := rwstress.Run(t, first, regs, rwstress.Options{Workers: 10, Duration: 2 * time.Second, WaitMs: 15_000, HoldMax: 2 * time.Millisecond})
	t.Logf("reads %d (shared %d), writes %d, downgrades %d, unserved %d, versions %d", res.Reads, res.Shared, res.Writes, res.Downgrades, res.Unserved, res.Versions)
	for _, v := range res.Violations {
		t.Error(v)
	}
	if res.Unserved > 0 {
		t.Errorf("%d waits ran out", res.Unserved)
	}
	if res.Reads < 10 || res.Writes < 5 || res.Downgrades == 0 || res.Versions < 20 {
		t.Errorf("vacuous: %+v", res)
	}
}
