// Proves the page shows a read/write lock as one row: while two readers
// hold it, "2 readers share it" and each reader's lease, fence, since and
// lease left; its queue with each waiter's mode (the writer, then a
// reader held back by it) and that the queued writer keeps new readers
// out (writer preference); never the readers' resource NAME/_read as a
// row of its own (the request index names it); a wait behind the readers
// past the threshold in the attention list, and a reader's hold past its
// threshold too. Once the readers release, the writer holds (marked
// "writer", the reader still queued and marked); after it downgrades, it
// reads alone and the row says when other readers are admitted.
package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/wire"
)

func TestPageShowsReadWriteLock(t *testing.T) {
	h := newHarnessWith(t, nil, func(c *dashboard.Config) { c.StuckWaitMs, c.StuckHoldMs = 2000, 3000 })
	const name = "invoice-batch/report"
	acq := func(owner string, read bool, waitMs uint64) wire.AcquireRequest {
		req := wire.AcquireRequest{Resource: name, OperationID: "op-" + owner, OperationClass: "report", RequestID: "r-" + owner, TTLMs: 10000, WaitMs: waitMs}
		if read {
			req.Mode = wire.ModeRead
		}
		return req
	}
	var leases []string
	for _, r := range []string{"reader-1", "reader-2"} {
		is, err := h.reg.Acquire(h.ctx, r, acq(r, true, 0))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, is.Grant.Lease)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	queue := func(owner string, read bool, n int) <-chan wire.Issued {
		got := make(chan wire.Issued, 1)
		go func() {
			if is, err := h.reg.Acquire(ctx, owner, acq(owner, read, 60000)); err == nil {
				got <- is
			}
		}()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if ls, err := h.reg.LockStatus(h.ctx, name); err == nil && len(ls.Waiters) == n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never queued", owner)
			}
		}
	}
	writer := queue("writer-1", false, 1)
	queue("reader-3", true, 2)
	h.d.NoteResource(wire.ReadResource(name)) // discovery names the readers' resource; the page shows its lock
	p := h.page()
	for _, want := range []string{
		`<tr class="res rwlock" data-resource="` + name + `" data-readers="2">`,
		`<span class="readers-count">2 readers share it</span>`,
		`<li class="reader" data-lease="` + leases[0] + `"><span class="reader-owner">reader-1</span> <small class="lease">` + leases[0] + ` · fence 1 · since`,
		`<li class="reader" data-lease="` + leases[1] + `"><span class="reader-owner">reader-2</span> <small class="lease">` + leases[1] + ` · fence 1 · since`,
		`9s left`,
		`<td class="waiters">2 <small>writer-1 <span class="mode" data-mode="write">(writer)</span>, reader-3 <span class="mode" data-mode="read">(reader)</span></small>`,
		`<small class="writer-preference">a writer is queued: new readers wait behind it (writer preference)</small>`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(p, `data-resource="`+name+`/_read"`) || strings.Count(p, `data-resource="`+name+`"`) != 1 {
		t.Errorf("the readers' resource shown as a row of its own, or the lock twice:\n%s", p)
	}
	h.clk.Advance(2 * time.Second) // the writer has waited past 2 s, the readers held past 3 s (each page() adds a second)
	p = h.page()
	for _, want := range []string{
		name + ": writer-1 has waited 4s behind 2 readers, the longest held 4s (2 waiting in all); stuck after 2s",
		name + "/_read: read-held by reader-1 for 4s",
		`<tr class="res stuck rwlock" data-resource="` + name + `"`,
		`<li class="reader stuck-flag" data-lease="` + leases[0] + `">`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("stuck: page lacks %q\n%s", want, p)
		}
	}

	// Both readers release: the writer holds, the reader still waits.
	for i, r := range []string{"reader-1", "reader-2"} {
		if err := h.reg.Release(h.ctx, r, wire.ReadResource(name), leases[i]); err != nil {
			t.Fatal(err)
		}
	}
	w := <-writer
	p = h.page()
	for _, want := range []string{
		`<td class="holder">writer-1 <small class="writer">writer</small> <small class="lease">` + w.Grant.Lease + ` · fence 2</small>`,
		`<td class="waiters">1 <small>reader-3 <span class="mode" data-mode="read">(reader)</span></small></td>`,
		`data-readers="0"`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the writer holds: page lacks %q", want)
		}
	}
	if strings.Contains(p, "writer preference") || strings.Contains(p, `class="reader"`) {
		t.Errorf("the writer holds: a reader or the writer preference still shown:\n%s", p)
	}

	// The writer downgrades: it reads alone until its HELD statements expire.
	if _, err := h.reg.Downgrade(h.ctx, "writer-1", wire.DowngradeRequest{Resource: name, Lease: w.Grant.Lease, RequestID: "r-down"}); err != nil {
		t.Fatal(err)
	}
	p = h.page()
	for _, want := range []string{`<span class="readers-count">1 reader holds it</span> <small class="readers-from">other readers admitted in `,
		`<span class="reader-owner">writer-1</span> <small class="lease">`, `· fence 2 · since`} {
		if !strings.Contains(p, want) {
			t.Errorf("after the downgrade: page lacks %q\n%s", want, p)
		}
	}
}
