// This file proves the retention sweep deletes only request entries whose
// lease ended more than RequestRetentionMs ago, never a live grant's; that
// it reads what is due and never the whole index; and that entries an
// earlier version wrote without a sweep item are indexed and then swept.
package registry_test

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// due is how long after a lease's end (or first expiry, if later) its
// entry is deleted: the retention.
func (e *env) retention() time.Duration {
	return time.Duration(e.reg.Config().RequestRetentionMs) * time.Millisecond
}

func (e *env) sweep(want int) {
	e.t.Helper()
	if n, err := e.reg.SweepRequests(e.ctx); err != nil || n != want {
		e.t.Fatalf("sweep at %s: deleted %d, %v; want %d", e.clock.Now().Format(time.TimeOnly), n, err, want)
	}
}

func TestSweepDeletesOnlyPastRetention(t *testing.T) {
	e := newEnv(t, nil)
	ttl := 10 * time.Second // req's
	for i := 0; i < 3; i++ {
		a := e.mustAcquire("worker-a", req(fmt.Sprint("inv/", i), fmt.Sprint("old-", i)))
		if err := e.reg.Release(e.ctx, "worker-a", a.Grant.Resource, a.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(e.retention() / 2)
	// Never released: its entry stays HELD (expiry is judged lazily) and
	// the sweep leaves it, whatever the clock says.
	e.mustAcquire("worker-a", req("inv/live", "live"))
	e.clock.Advance(e.retention()/2 + ttl - 5*time.Second)
	recent := e.mustAcquire("worker-b", req("inv/recent", "recent"))
	e.clock.Advance(5 * time.Second)
	if err := e.reg.Release(e.ctx, "worker-b", "inv/recent", recent.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	e.sweep(3)
	for _, c := range []struct{ owner, id string }{{"worker-a", "live"}, {"worker-b", "recent"}} {
		if _, err := e.reg.QueryRequest(e.ctx, c.owner, c.id); err != nil {
			t.Fatalf("%s swept: %v", c.id, err)
		}
	}
	e.sweep(0)
	// "live" expired unrenewed at half the retention plus its TTL: its
	// entry goes a retention later. "recent" ended 5 s before its first
	// expiry: it is looked at (and due) at that expiry plus the
	// retention, not before.
	e.clock.Advance(e.retention() - 1*time.Millisecond)
	e.sweep(1)
	e.clock.Advance(5 * time.Second)
	e.sweep(0)
	e.clock.Advance(time.Millisecond)
	e.sweep(1)
}

func TestSweepSettlesLazilyExpiredLeases(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1")) // never released
	e.clock.Advance(time.Duration(a.Grant.TTLMs) * time.Millisecond)
	e.sweep(0)
	e.clock.Advance(e.retention())
	e.sweep(1)
	if info, _ := e.reg.Resource(e.ctx, "inv/1"); info.HighestFence != a.Grant.FenceToken || info.HolderLease != "" {
		t.Fatalf("resource after settle: %+v", info)
	}
}

// Entries are written once, so the sweep reads when a lease ended from
// its record, also for leases that fell out of its Ended list; the
// holder's entry stays whatever its age, its item moved on at each look.
func TestSweepReadsEndsFromTheRecord(t *testing.T) {
	e := newEnv(t, nil)
	start := e.clock.Now()
	for i := range 5 {
		r := req("inv/1", fmt.Sprint("c-", i))
		r.TTLMs = 2000
		a := e.mustAcquire("worker-a", r)
		e.clock.Advance(time.Second)
		if err := e.reg.Release(e.ctx, "worker-a", "inv/1", a.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	holder := e.mustAcquire("worker-a", req("inv/1", "holder"))
	// Leases c-0..c-4 ended at 1..5 s; Ended remembers c-3 and c-4, so
	// c-0..c-2 count from c-3's end plus the skew (4.5 s). c-i is first
	// looked at at its first expiry (2+i s) plus the retention.
	renewUntil := func(at time.Duration) {
		for e.clock.Now().Sub(start) < at {
			if _, err := e.reg.Renew(e.ctx, "worker-a", "inv/1", holder.Grant.Lease); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(min(5*time.Second, at-e.clock.Now().Sub(start)))
		}
	}
	renewUntil(e.retention() + 4400*time.Millisecond)
	e.sweep(0) // c-0..c-2 looked at: their own ends are past, c-3's is not
	renewUntil(e.retention() + 4500*time.Millisecond)
	e.sweep(3)
	renewUntil(e.retention() + 6*time.Second)
	e.sweep(2) // c-3 and c-4
	renewUntil(3*e.retention() + 20*time.Second)
	e.sweep(0) // the holder, looked at and moved on each time
	if q, err := e.reg.QueryRequest(e.ctx, "worker-a", "holder"); err != nil || q.Status.State != grant.StateHeld {
		t.Fatalf("the holder's entry: %v %v", q.Status, err)
	}
}

// A resource that never rests: every look at an entry of a lease that
// fell out of its record's Ended finds the oldest end Ended remembers
// moved on with the later cycles, so the record alone would keep the
// entry as long as the resource stays busy. The sweep writes down the end
// it first placed (lockstate.EndedEntry), and the entry is due a
// retention after it: its first expiry plus at most twice the retention
// and a sweep interval, whatever the resource does meanwhile. Before
// that it answers as it did (EXPIRED, the same grant).
func TestSweepForgetsEntriesOfABusyResource(t *testing.T) {
	e := newEnv(t, nil)
	first := e.mustAcquire("worker-a", req("busy/1", "first"))
	if err := e.reg.Release(e.ctx, "worker-a", "busy/1", first.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	ttl := time.Duration(first.Grant.TTLMs) * time.Millisecond
	interval := registry.SweepIntervalDefault
	deadline := e.clock.Now().Add(ttl + 2*e.retention() + 2*interval)
	gone := time.Time{}
	for i := 0; e.clock.Now().Before(deadline.Add(e.retention())); i++ {
		a := e.mustAcquire("worker-b", req("busy/1", fmt.Sprint("cycle-", i)))
		if err := e.reg.Release(e.ctx, "worker-b", "busy/1", a.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		if i%10 == 0 {
			if _, err := e.reg.SweepRequests(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		q, err := e.reg.QueryRequest(e.ctx, "worker-a", "first")
		switch {
		case err == nil && gone.IsZero():
			if q.Status.State != grant.StateReleased && q.Status.State != grant.StateExpired || q.Grant.Digest() != first.Grant.Digest() {
				t.Fatalf("before it is swept the entry answers %v", q.Status.State)
			}
		case err == nil:
			t.Fatal("the entry came back")
		case gone.IsZero():
			gone = e.clock.Now()
		}
	}
	switch {
	case gone.IsZero():
		t.Fatalf("the entry of a busy resource's lease was never swept in %v", deadline.Add(e.retention()).Sub(first.Grant.IssuedAt))
	case gone.After(deadline):
		t.Fatalf("swept %v after its grant, want within %v", gone.Sub(first.Grant.IssuedAt), deadline.Sub(first.Grant.IssuedAt))
	case gone.Before(first.Grant.IssuedAt.Add(e.retention())):
		t.Fatalf("swept %v after its grant, before the retention", gone.Sub(first.Grant.IssuedAt))
	}
}

// An entry an earlier version wrote again at its lease's end says when
// it ended: the sweep counts from there, without reading the record.
func TestSweepKeepsEarlierVersionsEndedEntries(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1"))
	if err := e.reg.Release(e.ctx, "worker-a", "inv/1", a.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	key := lockstate.RequestKey{Owner: "worker-a", RequestID: "a1"}
	snap, err := e.store.Read(e.ctx, "", []lockstate.RequestKey{key})
	if err != nil {
		t.Fatal(err)
	}
	old := *snap.Requests[0].Entry
	endedMs := e.clock.Now().UnixMilli() + 60_000 // as the earlier version wrote it
	old.State, old.EndedAtMs = grant.StateReleased, endedMs
	if res, err := e.store.Commit(e.ctx, registry.Write{Requests: []registry.RequestWrite{{Key: key, Compare: true, ModRev: snap.Requests[0].ModRev, Entry: &old}}}); err != nil || !res.OK {
		t.Fatalf("write the earlier version's entry: %+v %v", res, err)
	}
	e.clock.Advance(e.retention() + 59*time.Second)
	e.sweep(0)
	if q, err := e.reg.QueryRequest(e.ctx, "worker-a", "a1"); err != nil || q.Status.State != grant.StateReleased {
		t.Fatalf("query of the earlier version's entry: %v %v", q.Status, err)
	}
	e.clock.Advance(time.Second)
	e.sweep(1)
}

// sweepCountingStore counts the reads of whole indexes and of single entries.
type sweepCountingStore struct {
	registry.Store
	reads, scans atomic.Int64
}

func (c *sweepCountingStore) Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	c.reads.Add(1)
	return c.Store.Read(ctx, resource, keys)
}

func (c *sweepCountingStore) ScanRequests(ctx context.Context, after lockstate.RequestKey, limit int) ([]registry.RequestSlot, error) {
	c.scans.Add(1)
	return c.Store.ScanRequests(ctx, after, limit)
}

// A sweep reads the entries that are due, never the whole index: with
// 300 entries kept and 5 due it reads about the 5 (and the settings),
// and scans the request index not once. Negative control: IndexRequests,
// the full walk an earlier version's entries need, scans it.
func TestSweepReadsWhatIsDue(t *testing.T) {
	e := newEnv(t, nil)
	counted := &sweepCountingStore{Store: e.store}
	k, _ := testKey(t)
	reg, err := registry.New(counted, e.reg.Config(), e.clock, k)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		a := e.mustAcquire("worker-a", req(fmt.Sprint("inv/", i), fmt.Sprint("due-", i)))
		if err := e.reg.Release(e.ctx, "worker-a", a.Grant.Resource, a.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(e.retention())
	for i := range 300 {
		a := e.mustAcquire("worker-b", req(fmt.Sprint("inv/", i), fmt.Sprint("kept-", i)))
		if err := e.reg.Release(e.ctx, "worker-b", a.Grant.Resource, a.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(10 * time.Second)
	if n, err := reg.SweepRequests(e.ctx); err != nil || n != 5 {
		t.Fatalf("sweep: deleted %d, %v", n, err)
	}
	if r, s := counted.reads.Load(), counted.scans.Load(); r > 5+2 || s != 0 {
		t.Fatalf("the sweep read %d times and scanned the request index %d times, want about the 5 due and none", r, s)
	}
	if _, err := reg.IndexRequests(e.ctx); err != nil || counted.scans.Load() == 0 {
		t.Fatalf("negative control: the full walk scanned %d times (%v)", counted.scans.Load(), err)
	}
}

// Entries written without a sweep item (by a version before the index)
// are indexed by the loop's first pass and then swept like any other.
func TestSweepLoopIndexesEarlierEntries(t *testing.T) {
	e := newEnv(t, nil)
	body := lockstate.GrantBody{
		Resource: "inv/1", Owner: "worker-a", RequestID: "legacy", Lease: "l1-00000000",
		OperationRoot: grant.OperationRoot("inv/1", "op").String(), OperationClass: "settle",
		FenceToken: 1, IssuerEpoch: epoch, TTLMs: 10_000, IssuedAtMs: e.clock.Now().UnixMilli(),
	}
	key := lockstate.RequestKey{Owner: "worker-a", RequestID: "legacy"}
	ended := lockstate.EndedLease{Lease: body.Lease, Owner: body.Owner, State: grant.StateReleased, AtMs: body.IssuedAtMs + 1000}
	if res, err := e.store.Commit(e.ctx, registry.Write{Resource: "inv/1", Record: &lockstate.Record{HighestFence: 1, Ended: []lockstate.EndedLease{ended}},
		Requests: []registry.RequestWrite{{Key: key, Compare: true, Entry: &lockstate.RequestEntry{Grant: body, ParamsDigest: "p", State: grant.StateHeld}}}}); err != nil || !res.OK {
		t.Fatalf("write an earlier version's entry: %+v %v", res, err)
	}
	if items, _ := e.store.ScanSweep(e.ctx, registry.SweepItem{}, math.MaxInt64, 10); len(items) != 0 {
		t.Fatalf("setup: items %v", items)
	}
	e.clock.Advance(e.retention() + 10*time.Second)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	swept := make(chan int, 1)
	go e.reg.SweepLoop(ctx, time.Minute, func(n int, err error) {
		if err != nil {
			t.Error(err)
		}
		swept <- n
		cancel()
	})
	for e.clock.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	e.clock.Advance(time.Minute)
	if n := <-swept; n != 1 {
		t.Fatalf("the first pass deleted %d, want the earlier version's entry", n)
	}
	if _, err := e.reg.QueryRequest(e.ctx, "worker-a", "legacy"); err == nil {
		t.Fatal("the earlier version's entry is still there")
	}
}
