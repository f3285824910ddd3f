// This file shows a counting semaphore from the SDK: three sessions each
// take one permit of "pool/db" (three slots, each its own resource and
// fence), a fourth is BUSY until one permit is released, then gets the
// freed slot at a higher fence.
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

func ExampleSession_Acquire_semaphore() {
	ctx := context.Background()
	clock := clienttest.NewFakeClock()
	reg, _ := clienttest.NewRegistry(clock, nil, nil)
	session := func(i int) *client.Session {
		return client.NewSession(registry.Direct{Registry: reg.Registry, Owner: fmt.Sprintf("worker-%d", i)},
			client.Options{Clock: clock, Rand: rand.New(rand.NewPCG(uint64(i), 1)), Manual: true})
	}
	permit := wire.AcquireRequest{Resource: "pool/db", OperationClass: "query", TTLMs: 10_000, Permits: 3}
	var leases []*client.Lease
	for i := range 3 {
		l, err := session(i).Acquire(ctx, permit)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(l.Grant().Resource, "fence", l.Grant().FenceToken)
		leases = append(leases, l)
	}
	fourth := session(3)
	if _, err := fourth.Acquire(ctx, permit); errors.Is(err, wire.ErrBusy) {
		fmt.Println("fourth permit: BUSY")
	}
	_ = leases[1].Release(ctx)
	l, err := fourth.Acquire(ctx, permit)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.Grant().Resource, "fence", l.Grant().FenceToken)
	// Output:
	// pool/db/_slot.0 fence 1
	// pool/db/_slot.1 fence 1
	// pool/db/_slot.2 fence 1
	// fourth permit: BUSY
	// pool/db/_slot.1 fence 2
}
