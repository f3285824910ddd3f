// This file measures a lock set's cost on a real (embedded) etcd beside
// what a caller would do without one: take a set of two members and
// release it (two store transactions; the acquire decided on the cache,
// the release after a ReadSet), against taking two plain locks in sorted
// order and releasing them (four, each on the cache). Uncontended, one
// caller, ungrouped commits:
//
//	go test ./registry/etcdstore -run '^$' -bench 'LockSetCycle' -benchtime 300x -count 5
package etcdstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

func BenchmarkLockSetCycle(b *testing.B) {
	ctx := context.Background()
	reg := storetest.NewRegistry(b, New(testClient, fmt.Sprintf("/bench-%d/", prefixSeq.Add(1)), WithBatching(1, 0)), nil)
	members := []string{"acct/a", "acct/b"}
	b.Run("set2", func(b *testing.B) {
		for i := range b.N {
			is, err := reg.AcquireSet(ctx, "w", wire.LockSetRequest{Members: members, OperationID: "op", OperationClass: "settle", RequestID: fmt.Sprint("s", i, "-", b.N)})
			if err != nil {
				b.Fatal(err)
			}
			var leases []wire.LeaseRequest
			for _, m := range is.Members {
				leases = append(leases, wire.LeaseRequest{Resource: m.Grant.Resource, Lease: m.Grant.Lease})
			}
			if err := reg.ReleaseSet(ctx, "w", leases); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain2", func(b *testing.B) {
		for i := range b.N {
			var held []wire.Issued
			for j, m := range members {
				is, err := reg.Acquire(ctx, "w", wire.AcquireRequest{Resource: m, OperationID: "op", OperationClass: "settle", RequestID: fmt.Sprint("p", i, "-", j, "-", b.N)})
				if err != nil {
					b.Fatal(err)
				}
				held = append(held, is)
			}
			for _, is := range held {
				if err := reg.Release(ctx, "w", is.Grant.Resource, is.Grant.Lease); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
