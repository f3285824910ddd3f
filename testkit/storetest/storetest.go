// Package storetest is the conformance suite every registry.Store must
// pass: linearizable compare-and-swap over records, request entries,
// settings and the gate key history under one growing revision, create revisions that survive a put,
// the failed compare's fresh snapshot, ordered scans, the sweep index,
// coalescing watches and lock sets (all-or-nothing writes over several
// records, lockset.go).
// Run calls it from each store's tests (memory, etcd, ZooKeeper), so the
// store the simulator runs (registry/memstore) and production's cannot
// drift apart. RunRestore adds the cases of a store restored with its
// revisions handed out again, for stores that can be (memstore).
package storetest

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// NewStore returns an empty store for one subtest; cleanup goes to t.Cleanup.
type NewStore func(t *testing.T) registry.Store

// Run runs the store contract tests and the registry-over-store scenarios.
func Run(t *testing.T, newStore NewStore) {
	t.Run("EmptyRead", func(t *testing.T) { testEmptyRead(t, newStore(t)) })
	t.Run("CommitThenRead", func(t *testing.T) { testCommitThenRead(t, newStore(t)) })
	t.Run("FailedCompareReturnsCurrent", func(t *testing.T) { testFailedCompare(t, newStore(t)) })
	t.Run("ContentsDecideWhereGiven", func(t *testing.T) { testContentsDecide(t, newStore(t)) })
	t.Run("CreateRevisionSurvivesPut", func(t *testing.T) { testCreateRevision(t, newStore(t)) })
	t.Run("SettingsCompare", func(t *testing.T) { testSettings(t, newStore(t)) })
	t.Run("ConcurrentCASLosesNoUpdate", func(t *testing.T) { testConcurrentCAS(t, newStore(t)) })
	t.Run("ConcurrentCommitsAreIndependent", func(t *testing.T) { testConcurrentIndependent(t, newStore(t)) })
	t.Run("ScanOrderAndLimit", func(t *testing.T) { testScan(t, newStore(t)) })
	t.Run("ScanRecordsPrefixOrderLimit", func(t *testing.T) { testScanRecords(t, newStore(t)) })
	t.Run("PageReadsItsLimit", func(t *testing.T) { testPageReadsItsLimit(t, newStore(t)) })
	t.Run("SweepIndexOrderBoundCursor", func(t *testing.T) { testSweepOrder(t, newStore(t)) })
	t.Run("SweepIndexBesideEntries", func(t *testing.T) { testSweepBesideEntry(t, newStore(t)) })
	t.Run("WatchDeliversLatest", func(t *testing.T) { testWatch(t, newStore(t)) })
	t.Run("KeyHistoryCommitThenRead", func(t *testing.T) { testKeyHistoryCommitThenRead(t, newStore(t)) })
	t.Run("KeyHistoryComparesBytes", func(t *testing.T) { testKeyHistoryCompare(t, newStore(t)) })
	t.Run("KeyHistoryConcurrentCASLosesNoUpdate", func(t *testing.T) { testKeyHistoryConcurrent(t, newStore(t)) })
	RunLockSets(t, newStore)
	RunRegistry(t, newStore)
}

var ctx = context.Background()

func key(owner, id string) lockstate.RequestKey {
	return lockstate.RequestKey{Owner: owner, RequestID: id}
}

func entry(resource, owner, id string, fence uint64) *lockstate.RequestEntry {
	return &lockstate.RequestEntry{
		Grant: lockstate.GrantBody{
			Resource: resource, Owner: owner, RequestID: id, Lease: "l1",
			OperationRoot: grant.OperationRoot(resource, "op").String(), OperationClass: "settle",
			FenceToken: fence, IssuerEpoch: 1, TTLMs: 1000, IssuedAtMs: 1_700_000_000_000,
		},
		ParamsDigest: "p", State: grant.StateHeld,
	}
}

func mustRead(t *testing.T, s registry.Store, resource string, keys ...lockstate.RequestKey) registry.Snapshot {
	t.Helper()
	snap, err := s.Read(ctx, resource, keys)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return snap
}

func mustCommit(t *testing.T, s registry.Store, w registry.Write) registry.CommitResult {
	t.Helper()
	res, err := s.Commit(ctx, w)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return res
}

func testEmptyRead(t *testing.T, s registry.Store) {
	snap := mustRead(t, s, "a/b", key("w", "r1"))
	if snap.Revision < 1 || snap.Record != nil || snap.RecordRev != 0 || snap.SettingsRev != 0 {
		t.Fatalf("empty read: %+v", snap)
	}
	if len(snap.Requests) != 1 || snap.Requests[0].Entry != nil || snap.Requests[0].ModRev != 0 || snap.Requests[0].Key != key("w", "r1") {
		t.Fatalf("empty slot: %+v", snap.Requests)
	}
}

func testCommitThenRead(t *testing.T, s registry.Store) {
	before := mustRead(t, s, "a/b")
	rec := &lockstate.Record{HighestFence: 3, Floor: 1, PolicyGeneration: 2}
	res := mustCommit(t, s, registry.Write{
		Resource: "a/b", Record: rec,
		Requests: []registry.RequestWrite{{Key: key("w", "r1"), Compare: true, Entry: entry("a/b", "w", "r1", 3)}},
	})
	if !res.OK || res.Revision <= before.Revision {
		t.Fatalf("commit: %+v after revision %d", res, before.Revision)
	}
	snap := mustRead(t, s, "a/b", key("w", "r1"), key("w", "r2"))
	if snap.Revision < res.Revision || snap.RecordRev != res.Revision || snap.Record.HighestFence != 3 || snap.Record.PolicyGeneration != 2 {
		t.Fatalf("read after commit: %+v", snap)
	}
	sl := snap.Requests[0]
	if sl.Entry == nil || sl.ModRev != res.Revision || sl.CreateRev != res.Revision || sl.Entry.Grant.FenceToken != 3 {
		t.Fatalf("entry: %+v", sl)
	}
	if snap.Requests[1].Entry != nil {
		t.Fatal("unwritten entry present")
	}
	// A write touching only entries leaves the record's revision alone.
	res2 := mustCommit(t, s, registry.Write{Requests: []registry.RequestWrite{{Key: key("w", "r2"), Entry: entry("a/b", "w", "r2", 3)}}})
	if !res2.OK || res2.Revision <= res.Revision {
		t.Fatalf("second commit: %+v", res2)
	}
	if got := mustRead(t, s, "a/b").RecordRev; got != res.Revision {
		t.Fatalf("record revision moved to %d", got)
	}
}

// testContentsDecide: a write naming the contents it was decided on is
// judged by them, not by the revision: the record and the settings move
// away and back to the same contents, and a write decided on the first
// version commits. Negative control: the same write on the revision alone
// fails, so the case cannot pass on a store where the revisions did not
// move.
func testContentsDecide(t *testing.T, s registry.Store) {
	one, two := &lockstate.Record{HighestFence: 1}, &lockstate.Record{HighestFence: 2}
	e1, e2 := &lockstate.Settings{RevokedBelowEpoch: 1}, &lockstate.Settings{RevokedBelowEpoch: 2}
	first := mustCommit(t, s, registry.Write{Resource: "aba/1", Record: one, Settings: e1})
	away := mustCommit(t, s, registry.Write{Resource: "aba/1", RecordRev: first.Revision, Record: two,
		SettingsRev: first.Revision, Settings: e2})
	back := mustCommit(t, s, registry.Write{Resource: "aba/1", RecordRev: away.Revision, Record: one,
		SettingsRev: away.Revision, Settings: e1})
	if !first.OK || !away.OK || !back.OK {
		t.Fatalf("setup: %+v %+v %+v", first, away, back)
	}
	decidedOn := registry.Write{Resource: "aba/1", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 3},
		SettingsRev: first.Revision}
	if got := mustCommit(t, s, decidedOn); got.OK {
		t.Fatal("negative control: a write on revisions that moved committed")
	}
	decidedOn.RecordWas, decidedOn.SettingsWas = one, e1
	if got := mustCommit(t, s, decidedOn); !got.OK {
		t.Fatalf("a write decided on the contents the store holds failed: %+v", got.Current)
	}
	if snap := mustRead(t, s, "aba/1"); snap.Record.HighestFence != 3 {
		t.Fatalf("fence %d after the write, want 3", snap.Record.HighestFence)
	}
}

func testFailedCompare(t *testing.T, s registry.Store) {
	res := mustCommit(t, s, registry.Write{Resource: "a/b", Record: &lockstate.Record{HighestFence: 1}})
	mustCommit(t, s, registry.Write{Requests: []registry.RequestWrite{{Key: key("w", "r1"), Entry: entry("a/b", "w", "r1", 1)}}})
	for name, w := range map[string]registry.Write{
		"stale record": {Resource: "a/b", RecordRev: res.Revision - 1, Record: &lockstate.Record{HighestFence: 9},
			Requests: []registry.RequestWrite{{Key: key("w", "r9"), Entry: entry("a/b", "w", "r9", 9)}}},
		"record absent": {Resource: "a/b", RecordRev: 0, Record: &lockstate.Record{HighestFence: 9}},
		"entry exists": {Resource: "a/b", RecordRev: res.Revision, Record: &lockstate.Record{HighestFence: 9},
			Requests: []registry.RequestWrite{{Key: key("w", "r1"), Compare: true, ModRev: 0, Entry: entry("a/b", "w", "r1", 9)}}},
		"settings moved": {Resource: "a/b", RecordRev: res.Revision, SettingsRev: 42, Record: &lockstate.Record{HighestFence: 9}},
		// The revision matches, the contents the write was decided on do
		// not: what a record cached before an etcd restore looks like.
		"record contents differ": {Resource: "a/b", RecordRev: res.Revision, RecordWas: &lockstate.Record{HighestFence: 7},
			Record: &lockstate.Record{HighestFence: 9}},
		"settings contents differ": {Resource: "a/b", RecordRev: res.Revision, Record: &lockstate.Record{HighestFence: 9},
			SettingsWas: &lockstate.Settings{RevokedBelowEpoch: 5}},
	} {
		w.ReadKeys = []lockstate.RequestKey{key("w", "r1"), key("w", "r9")}
		got := mustCommit(t, s, w)
		if got.OK {
			t.Fatalf("%s: commit succeeded", name)
		}
		cur := got.Current
		if cur.RecordRev != res.Revision || cur.Record.HighestFence != 1 || len(cur.Requests) != 2 ||
			cur.Requests[0].Entry == nil || cur.Requests[1].Entry != nil || cur.Revision < res.Revision {
			t.Fatalf("%s: current %+v", name, cur)
		}
	}
	// The same write naming the contents it really read goes through.
	if got := mustCommit(t, s, registry.Write{Resource: "a/b", RecordRev: res.Revision, RecordWas: &lockstate.Record{HighestFence: 1},
		Record: &lockstate.Record{HighestFence: 2}}); !got.OK {
		t.Fatalf("a write naming the stored contents failed: %+v", got.Current)
	}
	// Nothing of the failed writes landed.
	snap := mustRead(t, s, "a/b", key("w", "r9"))
	if snap.Record.HighestFence != 2 || snap.Requests[0].Entry != nil {
		t.Fatalf("a failed commit wrote: %+v", snap)
	}
}

func testCreateRevision(t *testing.T, s registry.Store) {
	k := key("spiffe://ex.org/w/1", "r1")
	r1 := mustCommit(t, s, registry.Write{Requests: []registry.RequestWrite{{Key: k, Compare: true, Entry: entry("a", k.Owner, k.RequestID, 1)}}})
	e := entry("a", k.Owner, k.RequestID, 1)
	e.State, e.EndedAtMs = grant.StateReleased, 5
	r2 := mustCommit(t, s, registry.Write{Requests: []registry.RequestWrite{{Key: k, Compare: true, ModRev: r1.Revision, Entry: e}}})
	sl := mustRead(t, s, "", k).Requests[0]
	if !r2.OK || sl.CreateRev != r1.Revision || sl.ModRev != r2.Revision || sl.Entry.State != grant.StateReleased {
		t.Fatalf("after put over: %+v (r1 %d r2 %d)", sl, r1.Revision, r2.Revision)
	}
	r3 := mustCommit(t, s, registry.Write{Requests: []registry.RequestWrite{{Key: k, Compare: true, ModRev: r2.Revision}}})
	if sl := mustRead(t, s, "", k).Requests[0]; !r3.OK || sl.Entry != nil || sl.ModRev != 0 {
		t.Fatalf("after delete: %+v", sl)
	}
	r4 := mustCommit(t, s, registry.Write{Requests: []registry.RequestWrite{{Key: k, Compare: true, Entry: entry("a", k.Owner, k.RequestID, 2)}}})
	if sl := mustRead(t, s, "", k).Requests[0]; !r4.OK || sl.CreateRev != r4.Revision {
		t.Fatalf("recreated entry keeps old create revision: %+v", sl)
	}
}

func testSettings(t *testing.T, s registry.Store) {
	r1 := mustCommit(t, s, registry.Write{Settings: &lockstate.Settings{RevokedBelowEpoch: 3}})
	if !r1.OK {
		t.Fatal("settings commit failed")
	}
	if got := mustCommit(t, s, registry.Write{Settings: &lockstate.Settings{RevokedBelowEpoch: 4}}); got.OK || got.Current.Settings.RevokedBelowEpoch != 3 {
		t.Fatalf("stale settings compare: %+v", got)
	}
	snap := mustRead(t, s, "")
	if snap.Settings.RevokedBelowEpoch != 3 || snap.SettingsRev != r1.Revision {
		t.Fatalf("settings: %+v", snap)
	}
}

// testScan: ScanRequests pages through the request entries in key order
// (owner, then request ID), never more than its limit at a time.
func testScan(t *testing.T, s registry.Store) {
	owners := []string{"b", "a-b", "a", "spiffe://x.org/a", "a.b"}
	var ws []registry.RequestWrite
	for _, o := range owners {
		for _, id := range []string{"r2", "r1"} {
			ws = append(ws, registry.RequestWrite{Key: key(o, id), Entry: entry("x", o, id, 1)})
		}
	}
	mustCommit(t, s, registry.Write{Requests: ws})
	var got []lockstate.RequestKey
	after := lockstate.RequestKey{}
	for {
		page, err := s.ScanRequests(ctx, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("page of %d, limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		for _, sl := range page {
			if sl.Entry == nil || sl.CreateRev == 0 {
				t.Fatalf("scan slot %+v", sl)
			}
			got = append(got, sl.Key)
		}
		after = page[len(page)-1].Key
	}
	if len(got) != 2*len(owners) {
		t.Fatalf("scanned %d keys, want %d", len(got), 2*len(owners))
	}
	for i := 1; i < len(got); i++ {
		if !got[i-1].Less(got[i]) {
			t.Fatalf("scan order: %v before %v", got[i-1], got[i])
		}
	}
}
