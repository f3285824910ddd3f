package storetest

import (
	"math"
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// The sweep index's contract (registry.Store): items written beside an
// entry in one commit, listed in (AtMs, Owner, RequestID) order up to a
// bound and after a cursor, with no compare of their own; a failed
// compare writes none.

func sweepItem(atMs int64, owner, id, resource string) registry.SweepItem {
	return registry.SweepItem{AtMs: atMs, Key: key(owner, id), Resource: resource}
}

func mustScanSweep(t *testing.T, s registry.Store, after registry.SweepItem, beforeMs int64, limit int) []registry.SweepItem {
	t.Helper()
	items, err := s.ScanSweep(ctx, after, beforeMs, limit)
	if err != nil {
		t.Fatalf("scan sweep index: %v", err)
	}
	return items
}

// testSweepOrder: items of several instants and owners come back in
// order, bounded by beforeMs, a page at a time after the cursor, with
// the resources they were written with.
func testSweepOrder(t *testing.T, s registry.Store) {
	want := []registry.SweepItem{
		sweepItem(1_000, "a", "r1", "jobs/1"),
		sweepItem(1_000, "a", "r2", "jobs/2"),
		sweepItem(1_000, "b", "r1", "jobs/3"),
		sweepItem(1_999, "a", "r0", "jobs/4"),
		sweepItem(2_000, "spiffe://x.org/w", "r1", "jobs/%5"),
		sweepItem(86_400_000_123, "a", "r3", "jobs/6"),
	}
	var w registry.Write
	for i := len(want) - 1; i >= 0; i-- { // written out of order
		w.Sweeps = append(w.Sweeps, registry.SweepWrite{Item: want[i]})
	}
	if res := mustCommit(t, s, w); !res.OK {
		t.Fatalf("commit: %+v", res)
	}
	var got []registry.SweepItem
	for after := (registry.SweepItem{}); ; {
		page := mustScanSweep(t, s, after, math.MaxInt64, 2)
		if len(page) > 2 {
			t.Fatalf("page of %d, limit 2", len(page))
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1]
	}
	if len(got) != len(want) {
		t.Fatalf("scanned %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("item %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if due := mustScanSweep(t, s, registry.SweepItem{}, 2_000, 100); len(due) != 4 || due[3] != want[3] {
		t.Fatalf("due before 2000: %v, want the first four", due)
	}
	// A cursor with no key starts at its instant, inclusive.
	if from := mustScanSweep(t, s, registry.SweepItem{AtMs: 1_999}, 2_001, 100); len(from) != 2 || from[0] != want[3] {
		t.Fatalf("from 1999: %v", from)
	}
}

// testSweepBesideEntry: items are written with the commit they ride in,
// and only if its compares hold; putting an item that exists and deleting
// one that does not fail nothing.
func testSweepBesideEntry(t *testing.T, s registry.Store) {
	k := key("w", "r1")
	it := sweepItem(5_000, "w", "r1", "a/b")
	res := mustCommit(t, s, registry.Write{
		Requests: []registry.RequestWrite{{Key: k, Compare: true, Entry: entry("a/b", "w", "r1", 1)}},
		Sweeps:   []registry.SweepWrite{{Item: it}},
	})
	if items := mustScanSweep(t, s, registry.SweepItem{}, math.MaxInt64, 10); !res.OK || len(items) != 1 || items[0] != it {
		t.Fatalf("after the grant: %+v, items %v", res, items)
	}
	failed := mustCommit(t, s, registry.Write{
		Requests: []registry.RequestWrite{{Key: k, Compare: true, ModRev: res.Revision + 100}},
		Sweeps:   []registry.SweepWrite{{Item: it, Delete: true}, {Item: sweepItem(9_000, "w", "r1", "a/b")}},
	})
	if items := mustScanSweep(t, s, registry.SweepItem{}, math.MaxInt64, 10); failed.OK || len(items) != 1 || items[0] != it {
		t.Fatalf("a failed compare changed the index: %+v, items %v", failed, items)
	}
	again := mustCommit(t, s, registry.Write{Sweeps: []registry.SweepWrite{
		{Item: it}, // exists
		{Item: sweepItem(7_000, "w", "gone", "a/b"), Delete: true}, // never was
	}})
	if !again.OK {
		t.Fatalf("a put of an existing item or a delete of an absent one failed the commit: %+v", again)
	}
	// The sweep's delete: the entry (compared) and its item, together.
	del := mustCommit(t, s, registry.Write{
		Requests: []registry.RequestWrite{{Key: k, Compare: true, ModRev: res.Revision}},
		Sweeps:   []registry.SweepWrite{{Item: it, Delete: true}},
	})
	snap := mustRead(t, s, "", k)
	if items := mustScanSweep(t, s, registry.SweepItem{}, math.MaxInt64, 10); !del.OK || len(items) != 0 || snap.Requests[0].Entry != nil {
		t.Fatalf("after the sweep's delete: %+v, items %v, entry %+v", del, items, snap.Requests[0])
	}
}
