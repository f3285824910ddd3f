// This file proves the fence-range bump through the Registry on the
// memory store: one bump moves every resource's next fence above every
// fence issued before it and ends the leases granted before it; a
// replica deciding on settings it cached before the bump cannot commit;
// a store restored from before a bump makes a registry that saw the bump
// refuse to sign (no HELD statement about the old range) until the next
// bump, while a registry that never saw it issues in the old range again
// (what the gates' regression rule is for); and the bump waits for the
// clock to pass its generation, so a later bump anywhere goes higher.
package registry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

// rangeWorld is two replicas on one memory store, on the system clock
// (virtual inside a synctest bubble).
type rangeWorld struct {
	t     *testing.T
	ctx   context.Context
	store *memstore.Store
	a, b  *registry.Registry
}

func newRangeWorld(t *testing.T) *rangeWorld {
	k, _ := testKey(t)
	w := &rangeWorld{t: t, ctx: context.Background(), store: memstore.New()}
	var err error
	for _, r := range []**registry.Registry{&w.a, &w.b} {
		if *r, err = registry.New(w.store, registry.DefaultConfig(epoch), clock.System{}, k); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *rangeWorld) acquire(reg *registry.Registry, owner, resource, id string) (wire.Issued, error) {
	r := req(resource, id)
	return reg.Acquire(w.ctx, owner, r)
}

func (w *rangeWorld) mustAcquire(reg *registry.Registry, owner, resource, id string) wire.Issued {
	w.t.Helper()
	is, err := w.acquire(reg, owner, resource, id)
	if err != nil {
		w.t.Fatalf("acquire %s %s: %v", resource, id, err)
	}
	return is
}

func TestBumpMovesEveryResourceAbove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newRangeWorld(t)
		held := w.mustAcquire(w.a, "worker-1", "jobs/a", "a-1")
		free := w.mustAcquire(w.a, "worker-1", "jobs/b", "b-1")
		if err := w.a.Release(w.ctx, "worker-1", "jobs/b", free.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		w.mustAcquire(w.b, "worker-2", "jobs/c", "c-1") // b caches jobs/c and the settings before the bump
		if held.Grant.FenceToken != 1 || free.Grant.FenceToken != 1 {
			t.Fatalf("before any bump: fences %d and %d, want 1 and 1 as always", held.Grant.FenceToken, free.Grant.FenceToken)
		}

		start := time.Now()
		fr, err := w.a.BumpFenceRange(w.ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		end := time.Now()
		// The generation is the clock's second when the bump read it, which
		// lies between start and end (a second may tick in between).
		if g := fr.Generation; g < uint64(start.Unix()) || g > uint64(end.Unix()) || fr.First != g<<32+1 || fr.Last != g<<32+1<<32-1 {
			t.Fatalf("bump: %+v, want the clock's second, between %d and %d", fr, start.Unix(), end.Unix())
		}
		if end.Unix() <= int64(fr.Generation) {
			t.Fatalf("the bump returned at %s: the clock must have passed generation %d", end, fr.Generation)
		}

		// Every resource, whoever decides: b's cached settings are stale.
		for _, c := range []struct {
			reg          *registry.Registry
			resource, id string
			owner        string
		}{{w.b, "jobs/c", "c-2", "worker-3"}, {w.b, "jobs/b", "b-2", "worker-2"}, {w.a, "jobs/new", "n-1", "worker-1"}, {w.b, "jobs/a", "a-2", "worker-2"}} {
			is := w.mustAcquire(c.reg, c.owner, c.resource, c.id)
			if is.Grant.FenceToken != fr.First {
				t.Errorf("%s after the bump: fence %d, want %d", c.resource, is.Grant.FenceToken, fr.First)
			}
		}
		// jobs/a's holder was granted before the bump: its lease ended
		// (the acquire above got jobs/a at once, no lock-delay), its
		// renewal says so, and its status is no longer HELD.
		if _, err := w.a.Renew(w.ctx, "worker-1", "jobs/a", held.Grant.Lease); !errors.Is(err, wire.ErrLeaseBroken) {
			t.Fatalf("renew of a lease from before the bump: %v, want LEASE_BROKEN", err)
		}
		st, err := w.b.Status(w.ctx, held.Grant)
		if err != nil || st.Status.State != grant.StateExpired {
			t.Fatalf("status of a grant from before the bump: %v %v, want EXPIRED", st.Status, err)
		}

		// A second bump right away is above the first.
		fr2, err := w.b.BumpFenceRange(w.ctx, 0)
		if err != nil || fr2.Generation <= fr.Generation {
			t.Fatalf("second bump: %+v %v, want above generation %d", fr2, err, fr.Generation)
		}
	})
}

func TestBumpAboveAFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newRangeWorld(t)
		far := uint64(time.Now().Unix()+100_000)<<32 | 77 // a gate's highest, from a store whose clock ran ahead
		if _, err := w.a.RaiseFloor(w.ctx, "jobs/a", far); !errors.Is(err, wire.ErrFenceRange) {
			t.Fatalf("a floor beyond the range: %v, want FENCE_RANGE (bump instead)", err)
		}
		fr, err := w.a.BumpFenceRange(w.ctx, far)
		if err != nil || fr.First <= far || fr.AheadOfClockMs < 99_000_000 {
			t.Fatalf("bump above %d: %+v %v; want above it, reported ahead of the clock", far, fr, err)
		}
		if is := w.mustAcquire(w.b, "worker-1", "jobs/a", "a-1"); is.Grant.FenceToken != fr.First {
			t.Fatalf("fence %d, want %d", is.Grant.FenceToken, fr.First)
		}
	})
}

func TestRestoreFromBeforeABump(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newRangeWorld(t)
		first := w.mustAcquire(w.a, "worker-1", "jobs/a", "a-1")
		backup := w.store.Image() // generation 0, fence 1 held
		fr, err := w.a.BumpFenceRange(w.ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		after := w.mustAcquire(w.a, "worker-2", "jobs/a", "a-2")
		w.store.Restore(backup, memstore.ReuseRevisions)

		// a read the bump: it signs nothing from the old range, not even
		// about the restored holder, whose HELD statement a gate that saw
		// fence `after` would take as proof of a regression.
		if _, err := w.acquire(w.a, "worker-3", "jobs/b", "b-1"); !errors.Is(err, wire.ErrFenceRange) {
			t.Fatalf("acquire on the restored store: %v, want FENCE_RANGE", err)
		}
		if _, err := w.a.Renew(w.ctx, "worker-1", "jobs/a", first.Grant.Lease); !errors.Is(err, wire.ErrFenceRange) {
			t.Fatalf("renewal of the restored holder: %v, want FENCE_RANGE", err)
		}
		// A registry that never saw the bump issues in the old range
		// again: fence 2 on jobs/a, below the gate's `after`. That is
		// the restore the gates' regression rule catches.
		k, _ := testKey(t)
		fresh, err := registry.New(w.store, registry.DefaultConfig(epoch), clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fresh.FenceRange(w.ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(12 * time.Second) // the restored holder's lease and its lock-delay run out
		again := w.mustAcquire(fresh, "worker-4", "jobs/a", "a-3")
		if again.Grant.FenceToken >= after.Grant.FenceToken {
			t.Fatalf("without a bump: fence %d, want the old range's 2", again.Grant.FenceToken)
		}

		// The runbook: bump. Every registry issues above every fence
		// issued before, and a signs again.
		fr2, err := w.a.BumpFenceRange(w.ctx, 0)
		if err != nil || fr2.Generation <= fr.Generation {
			t.Fatalf("bump after the restore: %+v %v, want above %d", fr2, err, fr.Generation)
		}
		for i, reg := range []*registry.Registry{w.a, fresh} {
			is := w.mustAcquire(reg, "worker-5", "jobs/c", []string{"c-1", "c-2"}[i])
			if is.Grant.FenceToken <= after.Grant.FenceToken {
				t.Fatalf("after the bump: fence %d, not above %d", is.Grant.FenceToken, after.Grant.FenceToken)
			}
			_ = w.a.Release(w.ctx, "worker-5", "jobs/c", is.Grant.Lease)
		}
	})
}
