// This file shows the registry's public API end to end over the memory
// store with a fixed clock: acquire, a retry with the same request ID,
// release, and what a stale owner's renewal gets.
package registry_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func (c fixedClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) } // never: the example never waits

func Example() {
	ctx := context.Background()
	key, _ := grant.GenerateKey(grant.AlgEd25519, "reg-1", bytes.NewReader(make([]byte, 32)))
	clock := fixedClock{time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)}
	reg, _ := registry.New(memstore.New(), registry.DefaultConfig(37), clock, key)

	req := wire.AcquireRequest{
		Resource: "invoice-batch/2026-07-19", OperationID: "settle-1",
		OperationClass: "settle", RequestID: "req-8c1f", TTLMs: 10_000,
	}
	is, err := reg.Acquire(ctx, "worker-settlement-7", req)
	if err != nil {
		panic(err)
	}
	// A fresh grant is its own HELD statement, valid until heldUntil: no
	// separate status.
	fmt.Println(is.Grant.FenceToken, is.Grant.BackendRevision, is.Status == nil, is.Grant.HeldUntil.Format(grant.TimeLayout))

	// The response was lost; the retry returns the same grant.
	again, _ := reg.Acquire(ctx, "worker-settlement-7", req)
	fmt.Println(again.Grant.Digest() == is.Grant.Digest())

	_ = reg.Release(ctx, "worker-settlement-7", req.Resource, is.Grant.Lease)
	_, err = reg.Renew(ctx, "worker-settlement-7", req.Resource, is.Grant.Lease)
	fmt.Println(wire.CodeOf(err))
	// Output:
	// 1 2 true 2026-07-19T10:00:02.000Z
	// true
	// NOT_HOLDER
}
