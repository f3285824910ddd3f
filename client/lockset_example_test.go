// This file shows a lock set from the SDK: a transfer takes both accounts
// at once (named in any order), each with its own grant and fence for its
// own gate; a second worker naming them in the other order is BUSY and
// holds neither; after the release it gets both, each at a higher fence.
package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

func ExampleSession_LockSet() {
	ctx := context.Background()
	clock := clienttest.NewFakeClock()
	reg, _ := clienttest.NewRegistry(clock, nil, nil)
	session := func(i int) *client.Session {
		return client.NewSession(registry.Direct{Registry: reg.Registry, Owner: fmt.Sprintf("worker-%d", i)},
			client.Options{Clock: clock, Rand: rand.New(rand.NewPCG(uint64(i), 1)), Manual: true})
	}
	transfer := wire.LockSetRequest{Members: []string{"accounts/bob", "accounts/alice"}, OperationClass: "transfer", TTLMs: 10_000}
	set, err := session(0).LockSet(ctx, transfer)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range set.Leases() {
		fmt.Println(l.Grant().Resource, "fence", l.Fence()) // l.Envelope(…) goes to this member's gate
	}
	other := session(1)
	reversed := wire.LockSetRequest{Members: []string{"accounts/alice", "accounts/bob"}, OperationClass: "transfer", TTLMs: 10_000}
	if _, err := other.AcquireSet(ctx, reversed); errors.Is(err, wire.ErrBusy) {
		fmt.Println("the other worker: BUSY, holding nothing")
	}
	_ = set.Release(ctx)
	set, err = other.AcquireSet(ctx, reversed)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range set.Leases() {
		fmt.Println(l.Grant().Resource, "fence", l.Fence())
	}
	// Output:
	// accounts/alice fence 1
	// accounts/bob fence 1
	// the other worker: BUSY, holding nothing
	// accounts/alice fence 2
	// accounts/bob fence 2
}
