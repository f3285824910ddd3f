// Proves the page's break for the primitives beyond one lock: a
// semaphore's row offers a Break… per held slot, whose break ends that
// permit alone and the queue's head takes the slot; a read/write lock's
// row offers Break readers…, whose form says every reader ends and whose
// break ends them all and serves the queued writer; a lock set member's
// Break… says it ends the whole set, its form warns so, and its break
// ends every member (the message names the others).
package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/wire"
)

func escapedQuery(r string) string { return strings.ReplaceAll(r, "/", "%2f") }

func TestBreakSemaphoreSlotFromThePage(t *testing.T) {
	h := newHarness(t, nil)
	const sem = "invoice-batch/pool"
	permit := func(owner string, waitMs uint64) wire.AcquireRequest {
		return wire.AcquireRequest{Resource: sem, Permits: 2, OperationID: "op-" + owner, OperationClass: "settle", RequestID: "r-" + owner, TTLMs: 30000, WaitMs: waitMs}
	}
	var held []wire.Issued
	for _, w := range []string{"worker-1", "worker-2"} {
		is, err := h.reg.Acquire(h.ctx, w, permit(w, 0))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, is)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	third := make(chan error, 1)
	go func() { _, err := h.reg.Acquire(ctx, "worker-3", permit("worker-3", 20000)); third <- err }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ls, err := h.reg.LockStatus(h.ctx, sem); err == nil && len(ls.Waiters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker-3 never queued")
		}
	}
	h.d.NoteResource(sem)
	h.page()
	_, p, _ := h.do(http.MethodGet, "/ui/", tokAdmin, nil)
	for _, s := range held {
		if !strings.Contains(p, `class="button small break" href="/ui/action?kind=break&amp;resource=`+escapedQuery(s.Grant.Resource)+`"`) {
			t.Errorf("no Break… for slot %s:\n%s", s.Grant.Resource, p)
		}
	}
	slot := held[1].Grant.Resource
	f := url.Values{"kind": {"break"}, "resource": {slot}, "lease": {held[1].Grant.Lease}, "note": {"worker-2 hung"}}
	if code, body, _ := h.actAs(tokAdmin, f, slot); code != http.StatusSeeOther {
		t.Fatalf("act: %d\n%s", code, body)
	}
	if err := <-third; err != nil {
		t.Fatalf("the queue's head after the slot's break: %v", err)
	}
	ls, err := h.reg.LockStatus(h.ctx, slot)
	if err != nil || ls.Holder == nil || ls.Holder.Owner != "worker-3" {
		t.Fatalf("slot after the break: %+v %v, want worker-3", ls.Holder, err)
	}
	if ls, _ := h.reg.LockStatus(h.ctx, held[0].Grant.Resource); ls.Holder == nil || ls.Holder.Owner != "worker-1" {
		t.Fatalf("the other permit: %+v, want worker-1's untouched", ls.Holder)
	}
}

func TestBreakReadersFromThePage(t *testing.T) {
	h := newHarness(t, nil)
	const rw = "reports/daily"
	acq := func(owner string, read bool, waitMs uint64) wire.AcquireRequest {
		r := wire.AcquireRequest{Resource: rw, OperationID: "op-" + owner, OperationClass: "settle", RequestID: "r-" + owner, TTLMs: 30000, WaitMs: waitMs}
		if read {
			r.Mode = wire.ModeRead
		}
		return r
	}
	var readers []wire.Issued
	for _, o := range []string{"reader-1", "reader-2"} {
		is, err := h.reg.Acquire(h.ctx, o, acq(o, true, 0))
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, is)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	writer := make(chan error, 1)
	go func() { _, err := h.reg.Acquire(ctx, "writer-1", acq("writer-1", false, 20000)); writer <- err }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ls, err := h.reg.LockStatus(h.ctx, rw); err == nil && len(ls.Waiters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never queued")
		}
	}
	h.d.NoteResource(rw)
	h.page()
	readRes := wire.ReadResource(rw)
	if _, p, _ := h.do(http.MethodGet, "/ui/", tokAdmin, nil); !strings.Contains(p, `href="/ui/action?kind=break&amp;resource=`+escapedQuery(rw)+`/_read"`) || !strings.Contains(p, "Break readers…") {
		t.Errorf("no Break readers… on the read/write lock's row:\n%s", p)
	}
	code, form, _ := h.do(http.MethodGet, "/ui/action", tokAdmin, url.Values{"kind": {"break"}, "resource": {readRes}})
	for _, want := range []string{"2 reader(s) hold " + rw, "ends every reader&#39;s share in one write", `value="` + readers[0].Grant.Lease + `"`} {
		if code != http.StatusOK || !strings.Contains(form, want) {
			t.Errorf("the readers' break form (%d) lacks %q:\n%s", code, want, form)
		}
	}
	f := url.Values{"kind": {"break"}, "resource": {readRes}, "lease": {readers[0].Grant.Lease}, "note": {"readers hung"}}
	if code, body, _ := h.actAs(tokAdmin, f, readRes); code != http.StatusSeeOther {
		t.Fatalf("act: %d\n%s", code, body)
	}
	if err := <-writer; err != nil {
		t.Fatalf("the queued writer after the readers' break: %v", err)
	}
	if ls, _ := h.reg.LockStatus(h.ctx, rw); ls.Holder == nil || ls.Holder.Owner != "writer-1" || len(ls.Readers) != 0 {
		t.Fatalf("after the readers' break: holder %+v, %d readers; want writer-1 alone", ls.Holder, len(ls.Readers))
	}
	if !strings.Contains(h.logs.String(), "and with it "+readers[1].Grant.Lease+" on "+readRes) {
		t.Errorf("the audited message does not name the second reader:\n%s", h.logs)
	}
}

func TestBreakLockSetMemberFromThePage(t *testing.T) {
	h := newHarness(t, nil)
	a, b := "accounts/a", "accounts/b"
	set, err := h.reg.AcquireSet(h.ctx, "worker-1", wire.LockSetRequest{Members: []string{a, b}, OperationID: "op-set", OperationClass: "settle", RequestID: "r-set", TTLMs: 30000})
	if err != nil {
		t.Fatal(err)
	}
	h.d.NoteResource(a)
	h.d.NoteResource(b)
	h.page()
	if _, p, _ := h.do(http.MethodGet, "/ui/", tokAdmin, nil); !strings.Contains(p, `class="button small break break-set" href="/ui/action?kind=break&amp;resource=`+escapedQuery(b)+`" title="ends the whole lock set`) ||
		!strings.Contains(p, "Break… <small>(ends the whole set)</small>") {
		t.Errorf("the set member's Break… does not say it ends the set:\n%s", p)
	}
	code, form, _ := h.do(http.MethodGet, "/ui/action", tokAdmin, url.Values{"kind": {"break"}, "resource": {b}})
	if want := b + " is a member of worker-1&#39;s lock set " + a + " " + b + ": breaking it ends the whole set"; code != http.StatusOK || !strings.Contains(form, want) {
		t.Errorf("the set member's break form (%d) lacks %q:\n%s", code, want, form)
	}
	f := url.Values{"kind": {"break"}, "resource": {b}, "lease": {set.Members[1].Grant.Lease}, "note": {"set hung"}}
	if code, body, _ := h.actAs(tokAdmin, f, b); code != http.StatusSeeOther {
		t.Fatalf("act: %d\n%s", code, body)
	}
	for _, m := range []string{a, b} {
		if ls, _ := h.reg.LockStatus(h.ctx, m); ls.Holder != nil {
			t.Errorf("%s still held after the break of %s: %+v", m, b, ls.Holder)
		}
	}
	if !strings.Contains(h.logs.String(), "and with it the whole lock set: "+set.Members[0].Grant.Lease+" on "+a) {
		t.Errorf("the audited message does not name the set's other member:\n%s", h.logs)
	}
}
