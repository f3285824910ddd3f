// Proves the lock views and the break on a real registry in virtual
// time: a lock's status names its holder, since when and how long it has
// left, and its waiters with how long each has waited; a busy acquire
// names the same; listing is by prefix, in name order, paged, and leaves
// out what the caller may not see; a watch answers when the lock changes
// (a write, or an expiry that writes nothing); and a break ends the
// holder's lease at once, hands the resource to the next waiter with a
// higher fence, and answers the old holder's renewal LEASE_BROKEN.
package registry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/wire"
)

func TestLockStatusNamesHolderAndWaiters(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("jobs/x", "a"))
	e.clock.Advance(3 * time.Second)
	done := make(chan error, 1)
	go func() {
		w := req("jobs/x", "b")
		w.WaitMs = 30_000
		_, err := e.reg.Acquire(e.ctx, "worker-b", w)
		done <- err
	}()
	waitWaiters(t, e, "jobs/x", 1)
	e.clock.Advance(2 * time.Second)
	v, err := e.reg.LockStatus(e.ctx, "jobs/x")
	if err != nil {
		t.Fatal(err)
	}
	h := v.Holder
	if h == nil || h.Owner != "worker-a" || h.Lease != a.Grant.Lease || h.Fence != 1 || !h.Since.Equal(a.Grant.IssuedAt) {
		t.Fatalf("holder %+v, want worker-a's lease %s at fence 1 since %s", h, a.Grant.Lease, a.Grant.IssuedAt)
	}
	if left := v.Left(); left != 5*time.Second {
		t.Fatalf("lease left %s, want 5s (10s TTL, 5s gone)", left)
	}
	if len(v.Waiters) != 1 || v.Waiters[0].Owner != "worker-b" || v.ReadAt.Sub(v.Waiters[0].Since) != 2*time.Second {
		t.Fatalf("waiters %+v, want worker-b waiting 2s", v.Waiters)
	}
	// A busy acquire says the same, in one line.
	_, err = e.reg.Acquire(e.ctx, "worker-c", req("jobs/x", "c"))
	var be *wire.BusyError
	if !errors.As(err, &be) || !errors.Is(err, wire.ErrBusy) || be.Holder == nil || be.Holder.Owner != "worker-a" || be.Waiters != 1 {
		t.Fatalf("busy acquire: %v", err)
	}
	for _, want := range []string{"jobs/x is held by worker-a since ", "lease " + a.Grant.Lease, "5s left", "1 waiter)"} {
		if !strings.Contains(be.Error(), want) {
			t.Errorf("busy message %q lacks %q", be.Error(), want)
		}
	}
	if err := e.reg.Release(e.ctx, "worker-a", "jobs/x", a.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

func TestListLocksByPrefixPagedAndFiltered(t *testing.T) {
	e := newEnv(t, nil)
	for _, r := range []string{"jobs/b", "jobs/a", "jobs/c", "other/a"} {
		e.mustAcquire("worker-a", req(r, "r-"+strings.ReplaceAll(r, "/", "-")))
	}
	var got []string
	after := ""
	for {
		page, err := e.reg.ListLocks(e.ctx, "jobs/", after, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Locks {
			if l.Holder == nil {
				t.Fatalf("%s listed without its holder", l.Resource)
			}
			got = append(got, l.Resource)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if strings.Join(got, " ") != "jobs/a jobs/b jobs/c" {
		t.Fatalf("listed %v", got)
	}
	seen, err := e.reg.ListLocks(e.ctx, "", "", 10, func(r string) bool { return r != "jobs/b" })
	if err != nil || len(seen.Locks) != 3 {
		t.Fatalf("filtered list: %+v %v", seen, err)
	}
}

func TestWatchLockWakesOnExpiryWithoutAWrite(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("jobs/w", "a"))
	v, err := e.reg.LockStatus(e.ctx, "jobs/w")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan wire.LockStatus, 1)
	go func() {
		w, err := e.reg.WatchLock(e.ctx, "jobs/w", v.Revision, 60*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	time.Sleep(20 * time.Millisecond) // let the watch start; the fake clock has not moved
	select {
	case w := <-got:
		t.Fatalf("watch answered before anything changed: %+v", w)
	default:
	}
	e.clock.Advance(time.Duration(a.Grant.TTLMs) * time.Millisecond)
	select {
	case w := <-got:
		if w.Holder != nil {
			t.Fatalf("after the expiry the watch shows holder %+v", w.Holder)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch never saw the lease expire")
	}
}

func TestBreakHandsTheResourceOnAndFencesTheOldHolder(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("jobs/y", "a"))
	done := make(chan wire.Issued, 1)
	go func() {
		w := req("jobs/y", "b")
		w.WaitMs = 30_000
		is, err := e.reg.Acquire(e.ctx, "worker-b", w)
		if err != nil {
			t.Error(err)
		}
		done <- is
	}()
	waitWaiters(t, e, "jobs/y", 1)
	res, err := e.reg.Break(e.ctx, "jobs/y")
	if err != nil {
		t.Fatal(err)
	}
	if res.Broken == nil || res.Broken.Lease != a.Grant.Lease || res.Status.Holder == nil || res.Status.Holder.Owner != "worker-b" {
		t.Fatalf("break: %+v", res)
	}
	b := <-done
	if b.Grant.FenceToken <= a.Grant.FenceToken {
		t.Fatalf("the next grant's fence %d is not above the broken one's %d", b.Grant.FenceToken, a.Grant.FenceToken)
	}
	if _, err := e.reg.Renew(e.ctx, "worker-a", "jobs/y", a.Grant.Lease); !errors.Is(err, wire.ErrLeaseBroken) {
		t.Fatalf("the old holder's renewal: %v, want LEASE_BROKEN", err)
	}
	st, err := e.reg.Status(e.ctx, a.Grant)
	if err != nil || st.Status.State == "HELD" {
		t.Fatalf("the broken grant's status: %v %v", st.Status, err)
	}
	if free, err := e.reg.Break(e.ctx, "jobs/free"); err != nil || free.Broken != nil || free.Status.Holder != nil {
		t.Fatalf("breaking a free resource: %+v %v", free, err)
	}
}
