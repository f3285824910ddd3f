// This file runs the lock-set break check (storetest.CheckSetBreak) on a
// real ZooKeeper server: breaking one member ends the whole set in one
// set write (a multi over every member), the plain waiter is handed its
// member in that write, the waiting set claims its members at once. Its
// negative control (the member-only break) runs on the memory store, in
// the registry package's TestBreakSetMemberEndsTheWholeSet.
package zkstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/testkit/storetest"
)

func TestBreakSetMemberOnZooKeeper(t *testing.T) {
	server(t)
	s, err := New(context.Background(), testConn, fmt.Sprintf("/test-%d", rootSeq.Add(1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := storetest.NewRegistry(t, s, nil)
	if err := storetest.CheckSetBreak(t.Context(), reg, "brk", reg.Break); err != nil {
		t.Fatal(err)
	}
}
