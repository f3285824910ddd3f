// This file proves the counting semaphore over HTTP: POST /v1/acquire
// with permits grants a slot (its own resource and fence), the fourth
// permit of three is BUSY, another N is 409 PERMITS_MISMATCH, a permit
// renews and releases on its slot, a policy naming only the semaphore
// covers its slots, and GET /v1/locks/{name} shows the slots and queue.
package httpapi

import (
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

func TestSemaphoreOverHTTP(t *testing.T) {
	h := newHarness(t)
	sem := func(id string, n uint64) wire.AcquireRequest {
		r := acq("alice-only/pool", id)
		r.Permits = n
		return r
	}
	var held []wire.Issued
	for i := range 3 {
		is, err := h.alice.Acquire(bg, sem(fmt.Sprintf("s-%d", i), 3))
		if err != nil {
			t.Fatal(err)
		}
		if is.Grant.Resource != wire.SlotResource("alice-only/pool", i) {
			t.Fatalf("permit %d on %s", i, is.Grant.Resource)
		}
		held = append(held, is)
	}
	_, err := h.alice.Acquire(bg, sem("s-3", 3))
	wantAPIError(t, err, 409, "BUSY")
	_, err = h.alice.Acquire(bg, sem("s-4", 2))
	wantAPIError(t, err, 409, "PERMITS_MISMATCH")
	_, err = h.alice.Acquire(bg, sem("s-5", wire.PermitsMax+1))
	wantAPIError(t, err, 400, "INVALID")
	_, err = h.bob.Acquire(bg, sem("b-1", 3)) // bob may not use alice-only/*, nor its slots
	wantAPIError(t, err, 403, wire.CodeForbiddenResource)

	g := held[1].Grant
	if _, err := h.alice.Renew(bg, g.Resource, g.Lease); err != nil {
		t.Fatalf("renew a permit on its slot: %v", err)
	}
	if err := h.alice.Release(bg, g.Resource, g.Lease); err != nil {
		t.Fatalf("release a permit: %v", err)
	}
	st, err := h.alice.LockStatus(bg, "alice-only/pool")
	if err != nil || st.Permits != 3 || len(st.Slots) != 3 || st.Slots[1].Holder != nil || st.Slots[0].Holder == nil {
		t.Fatalf("status: %v %+v", err, st)
	}
	next, err := h.alice.Acquire(bg, sem("s-6", 3))
	if err != nil || next.Grant.Resource != g.Resource || next.Grant.FenceToken <= g.FenceToken {
		t.Fatalf("freed slot: %v %+v, want %s above fence %d", err, next.Grant, g.Resource, g.FenceToken)
	}
}
