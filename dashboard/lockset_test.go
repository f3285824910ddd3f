// Proves the page shows lock sets: a member held as part of a set names
// the set, its other members linked to their rows, and a waiting set's
// ticket in a member's queue says it waits for the whole set.
package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/wire"
)

func TestPageShowsLockSetHolderAndWaiter(t *testing.T) {
	h := newHarness(t, nil)
	set := func(owner string, waitMs uint64, members ...string) wire.LockSetRequest {
		return wire.LockSetRequest{Members: members, OperationID: "op-" + owner, OperationClass: "transfer", RequestID: "r-" + owner, TTLMs: 10000, WaitMs: waitMs}
	}
	if _, err := h.reg.AcquireSet(h.ctx, "mover-1", set("mover-1", 0, "invoice-batch/a", "invoice-batch/b")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go h.reg.AcquireSet(ctx, "mover-2", set("mover-2", 60000, "invoice-batch/b", "invoice-batch/c"))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ls, err := h.reg.LockStatus(h.ctx, "invoice-batch/c"); err == nil && len(ls.Waiters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("mover-2's set never queued")
		}
	}
	for _, r := range []string{"invoice-batch/a", "invoice-batch/b", "invoice-batch/c"} {
		h.d.NoteResource(r)
	}
	p := h.page()
	for _, want := range []string{
		// invoice-batch/a's row: held by mover-1 as part of {invoice-batch/a, invoice-batch/b}, invoice-batch/b linked.
		`<small class="lockset" data-set="invoice-batch/a invoice-batch/b">held as part of set {<span class="member self">invoice-batch/a</span>, <a class="member" href="#res-invoice-batch%2fb">invoice-batch/b</a>}</small>`,
		`<small class="lockset" data-set="invoice-batch/a invoice-batch/b">held as part of set {<a class="member" href="#res-invoice-batch%2fa">invoice-batch/a</a>, <span class="member self">invoice-batch/b</span>}</small>`,
		// invoice-batch/b's and invoice-batch/c's queues: mover-2 waits for {invoice-batch/b, invoice-batch/c}.
		`<small>mover-2 <span class="waits-set" data-set="invoice-batch/b invoice-batch/c">waits for set {<span class="member self">invoice-batch/b</span>, <a class="member" href="#res-invoice-batch%2fc">invoice-batch/c</a>}</span></small>`,
		`<small>mover-2 <span class="waits-set" data-set="invoice-batch/b invoice-batch/c">waits for set {<a class="member" href="#res-invoice-batch%2fb">invoice-batch/b</a>, <span class="member self">invoice-batch/c</span>}</span></small>`,
		`id="res-invoice-batch/a"`, `id="res-invoice-batch/b"`, `id="res-invoice-batch/c"`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q\n%s", want, p)
		}
	}
	// invoice-batch/c is free (the waiting set holds nothing) and its row says so.
	if i := strings.Index(p, `id="res-invoice-batch/c"`); i < 0 || !strings.Contains(p[i:min(i+200, len(p))], `<span class="muted">free</span>`) {
		t.Errorf("invoice-batch/c is not shown free while mover-2's set waits:\n%s", p)
	}
}
