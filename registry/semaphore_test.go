// This file proves the semaphore's shell over the memory store: N permits
// are N slots, each an ordinary fenced resource with its own fence
// sequence; a fourth caller of three permits is BUSY; N is recorded and
// another N refused (PERMITS_MISMATCH), as is a plain lock of the same
// name; a retried request gets its grant back; waiters are served FIFO as
// slots are released or expire (in virtual time, testing/synctest), and
// an expired holder's slot goes to the next waiter at a higher fence.
package registry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

func semReq(id string, permits, waitMs uint64) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: "pool/db", OperationID: "op-" + id, OperationClass: "settle",
		RequestID: id, TTLMs: 10_000, WaitMs: waitMs, Permits: permits}
}

func TestSemaphorePermitsAreSlots(t *testing.T) {
	e := newEnv(t, nil)
	seen := map[string]bool{}
	var grants []wire.Issued
	for i := range 3 {
		is := e.mustAcquire(fmt.Sprintf("w%d", i), semReq(fmt.Sprintf("r%d", i), 3, 0))
		if name, _, ok := wire.SlotOf(is.Grant.Resource); !ok || name != "pool/db" || seen[is.Grant.Resource] {
			t.Fatalf("permit %d on %q: want a distinct slot of pool/db", i, is.Grant.Resource)
		}
		seen[is.Grant.Resource] = true
		if is.Grant.FenceToken == 0 {
			t.Fatal("a permit without a fence")
		}
		grants = append(grants, is)
	}
	if _, err := e.reg.Acquire(e.ctx, "w3", semReq("r3", 3, 0)); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("fourth permit of three: %v, want BUSY", err)
	}
	// The same request again: its grant, not a fourth permit.
	again, err := e.reg.Acquire(e.ctx, "w1", semReq("r1", 3, 0))
	if err != nil || again.Grant.Lease != grants[1].Grant.Lease {
		t.Fatalf("retry: %v, lease %v want %s", err, again.Grant, grants[1].Grant.Lease)
	}
	for _, c := range []struct {
		name string
		req  wire.AcquireRequest
		want error
	}{
		{"another N", semReq("m1", 4, 0), wire.ErrPermitsMismatch},
		{"plain lock of a semaphore", semReq("m2", 0, 0), wire.ErrPermitsMismatch},
		{"plain lock of a slot", wire.AcquireRequest{Resource: wire.SlotResource("pool/db", 0), OperationID: "op", OperationClass: "settle", RequestID: "m3"}, wire.ErrInvalid},
		{"permits above the range", semReq("m4", wire.PermitsMax+1, 0), wire.ErrInvalid},
		{"a slot as a semaphore", wire.AcquireRequest{Resource: wire.SlotResource("pool/db", 0), OperationID: "op", OperationClass: "settle", RequestID: "m5", Permits: 2}, wire.ErrInvalid},
	} {
		if _, err := e.reg.Acquire(e.ctx, "other", c.req); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	plain := req("pool/plain", "p1")
	e.mustAcquire("other", plain)
	if _, err := e.reg.Acquire(e.ctx, "other", wire.AcquireRequest{Resource: "pool/plain", OperationID: "op", OperationClass: "settle", RequestID: "p2", Permits: 2}); !errors.Is(err, wire.ErrPermitsMismatch) {
		t.Errorf("semaphore over a plain lock: %v, want PERMITS_MISMATCH", err)
	}
	// A permit renews and releases as its slot's lease; the freed slot
	// goes to the next caller at a higher fence.
	g := grants[0].Grant
	if _, err := e.reg.Renew(e.ctx, "w0", g.Resource, g.Lease); err != nil {
		t.Fatalf("renew a permit: %v", err)
	}
	if err := e.reg.Release(e.ctx, "w0", g.Resource, g.Lease); err != nil {
		t.Fatalf("release a permit: %v", err)
	}
	next := e.mustAcquire("w3", semReq("r3b", 3, 0))
	if next.Grant.Resource != g.Resource || next.Grant.FenceToken <= g.FenceToken {
		t.Fatalf("after release: %s fence %d, want %s above %d", next.Grant.Resource, next.Grant.FenceToken, g.Resource, g.FenceToken)
	}
	st, err := e.reg.LockStatus(e.ctx, "pool/db")
	if err != nil || st.Permits != 3 || len(st.Slots) != 3 {
		t.Fatalf("status: %v %+v, want 3 permits and 3 slots", err, st)
	}
	for i, sl := range st.Slots {
		if sl.Holder == nil || sl.Resource != wire.SlotResource("pool/db", i) {
			t.Errorf("slot %d: %+v, want held", i, sl)
		}
	}
}

func TestSemaphoreWaitersFIFOAndExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		k, _ := testKey(t)
		cfg := registry.DefaultConfig(epoch)
		reg, err := registry.New(memstore.New(), cfg, clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		var held []wire.Issued
		for i := range 3 {
			is, err := reg.Acquire(ctx, fmt.Sprintf("h%d", i), semReq(fmt.Sprintf("h%d", i), 3, 0))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, is)
		}
		type served struct {
			who int
			is  wire.Issued
			at  time.Time
		}
		got := make(chan served, 2)
		for i := range 2 {
			go func() {
				is, err := reg.Acquire(ctx, fmt.Sprintf("w%d", i), semReq(fmt.Sprintf("w%d", i), 3, 60_000))
				if err != nil {
					t.Errorf("waiter %d: %v", i, err)
					return
				}
				got <- served{i, is, time.Now()}
			}()
			synctest.Wait() // waiter 0 queues before waiter 1
		}
		st, err := reg.LockStatus(ctx, "pool/db")
		if err != nil || len(st.Waiters) != 2 || st.Waiters[0].Owner != "w0" {
			t.Fatalf("queue: %v %+v, want w0 then w1", err, st.Waiters)
		}
		// A release: the head takes the freed slot, promptly (a watch, not a poll).
		released := time.Now()
		g := held[1].Grant
		if err := reg.Release(ctx, "h1", g.Resource, g.Lease); err != nil {
			t.Fatal(err)
		}
		s := <-got
		if s.who != 0 || s.is.Grant.Resource != g.Resource || s.is.Grant.FenceToken <= g.FenceToken {
			t.Fatalf("first served: waiter %d on %s fence %d; want waiter 0 on %s above %d", s.who, s.is.Grant.Resource, s.is.Grant.FenceToken, g.Resource, g.FenceToken)
		}
		if d := s.at.Sub(released); d > 100*time.Millisecond {
			t.Errorf("handoff took %v", d)
		}
		// An expiry: h0 is never renewed; its slot goes to w1 after the
		// TTL and lock-delay, at a fence above h0's.
		s = <-got
		g = held[0].Grant
		if s.who != 1 || s.is.Grant.Resource != g.Resource || s.is.Grant.FenceToken <= g.FenceToken {
			t.Fatalf("second served: waiter %d on %s fence %d; want waiter 1 on %s above %d", s.who, s.is.Grant.Resource, s.is.Grant.FenceToken, g.Resource, g.FenceToken)
		}
		if min := g.ExpiresAt.Add(time.Duration(cfg.LockDelayMs) * time.Millisecond); s.at.Before(min) {
			t.Errorf("slot reissued at %v, before expiry + lock-delay %v", s.at, min)
		}
		st, err = reg.LockStatus(ctx, "pool/db")
		if err != nil || len(st.Waiters) != 0 {
			t.Fatalf("queue after both served: %v %+v", err, st.Waiters)
		}
	})
}
