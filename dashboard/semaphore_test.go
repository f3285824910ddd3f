// Proves the page shows a counting semaphore as one row: its N, who holds
// each slot (lease, fence, since, lease left), its queue across the
// slots, never a slot as a resource of its own (the request index names
// slots), and a wait in its queue past the threshold as stuck, behind
// the permits held. A viewer sees it by the semaphore's name, as the
// API authorizes a slot.
package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/wire"
)

func TestPageShowsSemaphoreSlotsAndQueue(t *testing.T) {
	h := newHarnessWith(t, nil, func(c *dashboard.Config) { c.StuckWaitMs = 2000 })
	const sem = "invoice-batch/pool"
	permit := func(owner, reqID string, waitMs uint64) wire.AcquireRequest {
		return wire.AcquireRequest{Resource: sem, Permits: 2, OperationID: "op-" + owner, OperationClass: "settle", RequestID: reqID, TTLMs: 10000, WaitMs: waitMs}
	}
	for _, w := range []string{"worker-1", "worker-2"} {
		if _, err := h.reg.Acquire(h.ctx, w, permit(w, "r-"+w, 0)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go h.reg.Acquire(ctx, "worker-3", permit("worker-3", "r-worker-3", 60000))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ls, err := h.reg.LockStatus(h.ctx, sem); err == nil && len(ls.Waiters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker-3 never queued")
		}
	}
	// Discovery names the slots (the grants' resources); the page folds
	// them into their semaphore's row.
	h.d.NoteResource(wire.SlotResource(sem, 1))
	h.d.NoteResource(wire.SlotResource(sem, 0))
	p := h.page()
	for _, want := range []string{
		`data-resource="` + sem + `" data-permits="2"`,
		`semaphore · 2 of 2 permits held`,
		`data-slot="0" data-resource="` + sem + `/_slot.0"><span class="slot-index">slot 0</span> <span class="slot-holder">worker-1</span>`,
		`data-slot="1" data-resource="` + sem + `/_slot.1"><span class="slot-index">slot 1</span> <span class="slot-holder">worker-2</span>`,
		`fence 1 · since`, `9s left`,
		`<td class="waiters">1 <small>worker-3</small>`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(p, `<tr class="res" data-resource="`+sem+`/_slot.`) || strings.Count(p, `data-resource="`+sem+`"`) != 1 {
		t.Errorf("a slot shown as a resource of its own, or the semaphore twice:\n%s", p)
	}
	h.clk.Advance(2 * time.Second) // worker-3 has waited past the 2 s threshold (each page() adds a second)
	p = h.page()
	if !strings.Contains(p, sem+": worker-3 has waited 4s in the semaphore&#39;s queue, 2 of 2 permits held") || !strings.Contains(p, `semaphore" data-resource="`+sem+`"`) ||
		!strings.Contains(p, ` stuck semaphore" data-resource="`+sem+`"`) {
		t.Errorf("the stuck wait in the semaphore's queue is not shown:\n%s", p)
	}
}
