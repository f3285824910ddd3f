// This file proves the retention sweep deletes only request entries whose
// lease ended more than RequestRetentionMs ago, never a live grant's.
package registry_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

func TestSweepDeletesOnlyPastRetention(t *testing.T) {
	e := newEnv(t, nil)
	for i := 0; i < 3; i++ {
		a := e.mustAcquire("worker-a", req(fmt.Sprint("inv/", i), fmt.Sprint("old-", i)))
		if err := e.reg.Release(e.ctx, "worker-a", a.Grant.Resource, a.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	retention := time.Duration(e.reg.Config().RequestRetentionMs) * time.Millisecond
	e.clock.Advance(retention / 2)
	// Never released: its entry stays HELD (expiry is judged lazily) and
	// the sweep leaves it, whatever the clock says.
	e.mustAcquire("worker-a", req("inv/live", "live"))
	e.clock.Advance(retention/2 - 5*time.Second)
	recent := e.mustAcquire("worker-b", req("inv/recent", "recent"))
	e.clock.Advance(5 * time.Second)
	if err := e.reg.Release(e.ctx, "worker-b", "inv/recent", recent.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	next, n, err := e.reg.SweepRequests(e.ctx, lockstate.RequestKey{})
	if err != nil || n != 3 || next != (lockstate.RequestKey{}) {
		t.Fatalf("sweep: deleted %d, next %v, %v", n, next, err)
	}
	for _, c := range []struct{ owner, id string }{{"worker-a", "live"}, {"worker-b", "recent"}} {
		if _, err := e.reg.QueryRequest(e.ctx, c.owner, c.id); err != nil {
			t.Fatalf("%s swept: %v", c.id, err)
		}
	}
	if _, n, _ := e.reg.SweepRequests(e.ctx, lockstate.RequestKey{}); n != 0 {
		t.Fatalf("second sweep deleted %d", n)
	}
}

func TestSweepSettlesLazilyExpiredLeases(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1")) // never released
	e.clock.Advance(time.Duration(a.Grant.TTLMs) * time.Millisecond)
	if _, n, err := e.reg.SweepRequests(e.ctx, lockstate.RequestKey{}); err != nil || n != 0 {
		t.Fatalf("first sweep: %d %v", n, err)
	}
	retention := time.Duration(e.reg.Config().RequestRetentionMs) * time.Millisecond
	e.clock.Advance(retention)
	if _, n, err := e.reg.SweepRequests(e.ctx, lockstate.RequestKey{}); err != nil || n != 1 {
		t.Fatalf("sweep after retention: deleted %d, %v", n, err)
	}
	if info, _ := e.reg.Resource(e.ctx, "inv/1"); info.HighestFence != a.Grant.FenceToken || info.HolderLease != "" {
		t.Fatalf("resource after settle: %+v", info)
	}
}

// Entries are written once, so the sweep reads when a lease ended from
// its record, also for leases that fell out of its Ended list; the
// holder's entry stays whatever its age.
func TestSweepReadsEndsFromTheRecord(t *testing.T) {
	e := newEnv(t, func(c *registry.Config) { c.RequestRetentionMs = 60_000 })
	for i := range 5 {
		a := e.mustAcquire("worker-a", req("inv/1", fmt.Sprint("c-", i)))
		e.clock.Advance(time.Second)
		if err := e.reg.Release(e.ctx, "worker-a", "inv/1", a.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	holder := e.mustAcquire("worker-a", req("inv/1", "holder"))
	// Leases c-0..c-4 ended at 1..5 s; Ended remembers c-3 and c-4, so
	// c-0..c-2 count from c-3's end plus the skew (4.5 s).
	for i := range 61 { // keep the holder alive past every retention
		if i == 59 { // 64 s
			if _, n, err := e.reg.SweepRequests(e.ctx, lockstate.RequestKey{}); err != nil || n != 1 {
				t.Fatalf("sweep at 64 s: deleted %d, %v; want c-3 alone", n, err)
			}
		}
		if _, err := e.reg.Renew(e.ctx, "worker-a", "inv/1", holder.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
	}
	if _, n, err := e.reg.SweepRequests(e.ctx, lockstate.RequestKey{}); err != nil || n != 4 {
		t.Fatalf("sweep at 66 s: deleted %d, %v; want the other 4 ended", n, err)
	}
	if q, err := e.reg.QueryRequest(e.ctx, "worker-a", "holder"); err != nil || q.Status.State != grant.StateHeld {
		t.Fatalf("the holder's entry: %v %v", q.Status, err)
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
	retention := time.Duration(e.reg.Config().RequestRetentionMs) * time.Millisecond
	e.clock.Advance(retention + 59*time.Second)
	if _, n, err := e.reg.SweepRequests(e.ctx, lockstate.RequestKey{}); err != nil || n != 0 {
		t.Fatalf("sweep before the entry's own end plus retention: deleted %d, %v", n, err)
	}
	if q, err := e.reg.QueryRequest(e.ctx, "worker-a", "a1"); err != nil || q.Status.State != grant.StateReleased {
		t.Fatalf("query of the earlier version's entry: %v %v", q.Status, err)
	}
	e.clock.Advance(time.Second)
	if _, n, err := e.reg.SweepRequests(e.ctx, lockstate.RequestKey{}); err != nil || n != 1 {
		t.Fatalf("sweep at its end plus retention: deleted %d, %v", n, err)
	}
}
