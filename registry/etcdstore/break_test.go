// This file runs the lock-set break check (storetest.CheckSetBreak) on a
// real etcd: breaking one member ends the whole set in one set write (a
// Txn over every member), the plain waiter is handed its member in that
// write, the waiting set claims its members at once. Its negative control
// (the member-only break) runs on the memory store, in the registry
// package's TestBreakSetMemberEndsTheWholeSet.
package etcdstore

import (
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/testkit/storetest"
)

func TestBreakSetMemberOnEtcd(t *testing.T) {
	prefix := fmt.Sprintf("/test-%d/", prefixSeq.Add(1))
	reg := storetest.NewRegistry(t, New(testClient, prefix), nil)
	if err := storetest.CheckSetBreak(t.Context(), reg, "brk", reg.Break); err != nil {
		t.Fatal(err)
	}
}
