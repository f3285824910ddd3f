// This file runs the lock-set stress (testkit/locksetstress) on a real
// ZooKeeper server: sets over overlapping members, named in opposite
// orders, from many goroutines on two replicas (each its own Store over
// one root): every wait served (no deadlock), no partial hold seen at any
// revision, one holder per member, fences rising per member. The
// negative control (MultiLock, member by member) is in the registry
// package's test, on the memory store.
package zkstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/locksetstress"
	"github.com/fencegate/fencegate/testkit/storetest"
)

func TestLockSetsConcurrentOnZooKeeper(t *testing.T) {
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
		regs = append(regs, storetest.NewRegistry(t, s, nil))
	}
	res := locksetstress.Run(t, first, regs, locksetstress.Options{Workers: 10, Duration: 2 * time.Second, WaitMs: 15_000, HoldMax: 2 * time.Millisecond})
	t.Logf("sets %d, plain %d, unserved %d, observations %d", res.SetsGranted, res.PlainGranted, res.Unserved, res.Observations)
	for _, v := range res.Violations {
		t.Error(v)
	}
	if res.Unserved > 0 {
		t.Errorf("%d waits ran out: a set was not served in 15 s", res.Unserved)
	}
	if res.SetsGranted < 10 || res.Observations < 20 {
		t.Errorf("vacuous: %d sets granted, %d observations", res.SetsGranted, res.Observations)
	}
}
