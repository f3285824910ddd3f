// This file shows the client's public API in use: the happy path, recovery
// from a lost renewal, and MUTATION_UNKNOWN recovery by operation ID.
package client_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

// Acquire, build a fenced envelope, release.
func Example() {
	ctx := context.Background()
	clock := clienttest.NewFakeClock()
	reg, _ := clienttest.NewRegistry(clock, nil, nil)
	s := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: "worker-settlement-7"},
		client.Options{Clock: clock, Rand: rand.New(rand.NewPCG(1, 1)), Manual: true})

	l, err := s.Acquire(ctx, wire.AcquireRequest{
		Resource: "invoice-batch/2026-07-19", OperationID: "settle-42", OperationClass: "settle", TTLMs: 10_000,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.State(), "fence", l.Grant().FenceToken)
	m, _ := l.Envelope(1, gatetest.Payload("rows 1-1000"))
	fmt.Println("envelope:", m.OperationID, "fence", m.FenceToken, "segment", m.SegmentSeq)
	// Send m with the payload to the resource; once it answers, settle the
	// segment so that Release need not wait for the envelope's proof.
	l.Settle(1, gate.Accepted)
	_ = l.Release(ctx)
	fmt.Println(l.State(), l.Ctx().Err())
	// Output:
	// HELD fence 1
	// envelope: settle-42 fence 1 segment 1
	// RELEASED context canceled
}

// A renewal's answer is lost: the lease is OWNERSHIP_UNKNOWN at once (its
// context cancelled, envelopes refused) and HELD again only when the
// registry confirms the same grant, with a new context.
func ExampleLease_Tick() {
	ctx := context.Background()
	clock := clienttest.NewFakeClock()
	reg, _ := clienttest.NewRegistry(clock, nil, nil)
	net := &clienttest.Lossy{Inner: registry.Direct{Registry: reg.Registry, Owner: "worker-settlement-7"}}
	s := client.NewSession(net, client.Options{Clock: clock, Rand: rand.New(rand.NewPCG(1, 1)), Manual: true,
		OnTransition: func(_ string, from, to client.LeaseState, ev client.LeaseEvent) {
			if ev != "RenewDue" && ev != "RenewOK" {
				fmt.Printf("%s -%s-> %s\n", from, ev, to)
			}
		}})
	l, _ := s.Acquire(ctx, wire.AcquireRequest{Resource: "invoice-batch/2026-07-19", OperationID: "settle-42", OperationClass: "settle", TTLMs: 10_000})
	held := l.Ctx()

	net.Fault = func(op, _ string) clienttest.Fault { return clienttest.DropResponse } // the network eats every answer
	for l.State() == client.StateHeld {
		clock.Advance(250 * time.Millisecond)
		l.Tick(ctx)
	}
	_, err := l.Envelope(1, gatetest.Payload("x"))
	fmt.Println("old ctx:", held.Err(), "| envelope:", err != nil)

	net.Fault = nil // the registry answers again
	clock.Advance(client.QueryIntervalDefault)
	l.Tick(ctx)
	fmt.Println("old ctx:", held.Err(), "| new ctx:", l.Ctx().Err())
	// Output:
	// REQUESTED -AcquireOK-> HELD
	// RENEWING -RenewLost-> OWNERSHIP_UNKNOWN
	// OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN
	// old ctx: context canceled | envelope: true
	// OWNERSHIP_UNKNOWN -QueryHeld-> HELD
	// old ctx: context canceled | new ctx: <nil>
}

// A write's ACK is lost and the lease expires: the resource's receipts say
// whether it happened.
func ExampleResolver_Resolve() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fencegate-example")
	defer os.RemoveAll(dir)
	clock := clienttest.NewFakeClock()
	reg, _ := clienttest.NewRegistry(clock, nil, nil)
	db, _ := sqlgate.OpenSQLite(filepath.Join(dir, "resource.db"), "NORMAL")
	defer db.Close()
	g, _ := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: reg.Verifier}, Clock: clock})
	_ = g.Migrate(ctx, db)

	s := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: "worker-settlement-7"},
		client.Options{Clock: clock, Rand: rand.New(rand.NewPCG(1, 1)), Manual: true})
	l, _ := s.Acquire(ctx, wire.AcquireRequest{Resource: "invoice-batch/2026-07-19", OperationID: "settle-42", OperationClass: "settle", TTLMs: 10_000})
	m, _ := l.Envelope(1, gatetest.Payload("rows 1-1000"))
	noop := func(context.Context, *sql.Tx) error { return nil }
	_, _ = g.Run(ctx, db, "worker-settlement-7", &m, noop) // committed, but the ACK never arrives
	clock.Advance(time.Minute)                             // and the lease is long gone

	r := &client.Resolver{Receipts: client.ReceiptQuerierFunc(func(ctx context.Context, res, op string, fence uint64) (gate.Answer, error) {
		return g.QueryOperation(ctx, db, res, op, fence)
	})}
	got, _ := r.Resolve(ctx, client.UnknownOf(m))
	fmt.Println(got.Verdict, "segment", got.Receipt.SegmentSeq, "fence", got.Receipt.FenceToken)
	// Output:
	// ACCEPTED segment 1 fence 1
}
