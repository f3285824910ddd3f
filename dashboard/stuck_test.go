// Proves "is anything stuck" for locks on the page, against a real
// registry on a fake clock with small thresholds: while both the hold and
// the wait are under them the page says nothing is stuck, naming the
// thresholds; a waiter queued past the wait threshold is listed (who has
// waited how long behind whom, held how long) with its row flagged and its
// held-since and waiting-since cells; a hold past its threshold alone is
// listed too. A stuck lock nobody has named recently — a lease renewed for
// hours was granted hours ago — is still found, by the scan of the
// registry's locks.
package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/wire"
)

// smallThresholds: stuck after a 2 s wait or a 5 s hold.
func smallThresholds(c *dashboard.Config) { c.StuckWaitMs, c.StuckHoldMs = 2000, 5000 }

// queue starts owner's waiting acquire of res in the background and
// returns once the registry has it in the queue; cancel withdraws it.
func (h *harness) queue(ctx context.Context, owner, res string, waiters int) <-chan error {
	h.t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := h.reg.Acquire(ctx, owner, wire.AcquireRequest{Resource: res, OperationID: "op-" + owner, OperationClass: "settle",
			RequestID: "r-" + owner, WaitMs: 20000})
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ri, err := h.reg.Resource(h.ctx, res); err == nil && ri.Waiters == waiters {
			return done
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s never queued for %s", owner, res)
		}
	}
}

func TestStuckWaitAndHoldOnThePage(t *testing.T) {
	h := newHarnessWith(t, nil, smallThresholds)
	held, err := h.reg.Acquire(h.ctx, "worker-1", wire.AcquireRequest{Resource: resource, OperationID: "op-1", OperationClass: "settle", RequestID: "r-1", TTLMs: 30000})
	if err != nil {
		t.Fatal(err)
	}
	h.d.NoteResource(resource)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	waiting := h.queue(ctx, "worker-2", resource, 1)
	p := h.page() // held 1 s, waited 1 s
	if !strings.Contains(p, `id="allclear">Nothing is stuck: no wait over 2s, no hold over 5s,`) {
		t.Fatalf("under both thresholds the page should say nothing is stuck:\n%s", p)
	}
	h.clk.Advance(2 * time.Second)
	p = h.page() // held and waited 4 s
	want := resource + ": worker-2 has waited 4s behind worker-1, held 4s; stuck after 2s"
	if strings.Contains(p, "Nothing is stuck") || !strings.Contains(p, `<li class="bad">`+want+`</li>`) {
		t.Errorf("the stuck wait is not listed as %q:\n%s", want, p)
	}
	since := held.Grant.IssuedAt.UTC().Format("15:04:05 UTC")
	for _, cell := range []string{`<tr class="res stuck" data-resource="` + resource + `">`,
		`<td class="since">` + since + ` <small>(4s)</small></td>`,
		`<td class="waiting stuck-flag">worker-2 since ` + since + ` <small>(4s)</small></td>`} {
		if !strings.Contains(p, cell) {
			t.Errorf("the row lacks %s", cell)
		}
	}

	cancel() // worker-2 gives up: nobody waits, worker-1 holds on
	if err := <-waiting; err == nil {
		t.Fatal("the withdrawn wait was granted")
	}
	h.clk.Advance(time.Second)
	p = h.page() // held 6 s
	want = fmt.Sprintf("%s: held by worker-1 for 6s (since %s, lease %s, fence 1); stuck after 5s", resource, since, held.Grant.Lease)
	if strings.Contains(p, "Nothing is stuck") || !strings.Contains(p, `<li class="warn">`+want+`</li>`) || !strings.Contains(p, `<td class="since stuck-flag">`) {
		t.Errorf("the stuck hold is not listed as %q:\n%s", want, p)
	}
}

func TestScanFindsStuckLocksNotRecentlySeen(t *testing.T) {
	h := newHarnessWith(t, nil, smallThresholds)
	const old = "invoice-batch/2026-01-01"
	if _, err := h.reg.Acquire(h.ctx, "worker-1", wire.AcquireRequest{Resource: old, OperationID: "op-1", OperationClass: "settle", RequestID: "r-1", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(10 * time.Second) // held for 10 s: over the hold threshold
	for i := range dashboard.ResourcesShownMax {
		h.d.NoteResource(fmt.Sprintf("invoice-batch/recent-%03d", i)) // all seen since
	}
	if strings.Contains(h.page(), old) {
		t.Fatal("shown before the scan: the recently seen fill the page")
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go h.d.Run(ctx) // scans at start
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(h.page(), old+": held by worker-1 for") {
		if time.Now().After(deadline) {
			t.Fatalf("the lock scan did not bring the stuck %s to the page:\n%s", old, h.page())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
