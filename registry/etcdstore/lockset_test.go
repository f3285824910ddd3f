// This file runs the lock-set stress (testkit/locksetstress) on a real
// etcd, in each form the store commits in: ungrouped, grouped (one etcd
// transaction carrying several commits) and through the in-process
// client. Sets over overlapping members, named in opposite orders, from
// many goroutines on two replicas: every wait served (no deadlock), no
// partial hold seen at any revision, one holder per member, fences rising
// per member. The negative control (MultiLock, member by member) is in
// the registry package's test, on the memory store.
package etcdstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/locksetstress"
	"github.com/fencegate/fencegate/testkit/storetest"
)

func TestLockSetsConcurrentOnEtcd(t *testing.T) {
	inproc, inprocOpt := testEtcd.InProcess()
	for name, opts := range map[string][]Option{
		"ungrouped":  {WithBatching(1, 0)},
		"grouped":    nil,
		"in-process": {inprocOpt},
	} {
		t.Run(name, func(t *testing.T) {
			prefix := fmt.Sprintf("/test-%d/", prefixSeq.Add(1))
			c := testClient
			if name == "in-process" {
				c = inproc
			}
			var regs []*registry.Registry
			var first registry.Store
			for range 2 {
				s := New(c, prefix, opts...)
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
			if res.SetsGranted < 10 || res.Observations < 20 { // (the race detector slows an in-process etcd to about 10 sets a second)
				t.Errorf("vacuous: %d sets granted, %d observations", res.SetsGranted, res.Observations)
			}
		})
	}
}
