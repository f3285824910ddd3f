// This file proves the memory store passes the store conformance suite,
// its revision-reusing restore included, and that its other restore and
// its commit hook keep their contracts.
package memstore_test

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/storetest"
)

var ctx = context.Background()

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return memstore.New() })
}

// The JSON form, which a store writes while replicas of a version before
// the compact form share it, passes the same suite.
func TestConformanceJSONForm(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return memstore.New(memstore.WithStoredForm(registry.FormJSON)) })
}

func TestConformanceRestore(t *testing.T) {
	storetest.RunRestore(t, func(t *testing.T) storetest.Restorable {
		s := memstore.New()
		return storetest.Restorable{Store: s, Backup: func() func() {
			img := s.Image()
			return func() { s.Restore(img, memstore.ReuseRevisions) }
		}}
	})
}

func commit(t *testing.T, s *memstore.Store, w registry.Write) registry.CommitResult {
	t.Helper()
	res, err := s.Commit(ctx, w)
	if err != nil || !res.OK {
		t.Fatalf("commit: %+v %v", res, err)
	}
	return res
}

// TestRestoreBumpingRevisions: the data goes back, the revision counter
// does not, so no revision names two contents and a write decided before
// the restore fails on its revision alone.
func TestRestoreBumpingRevisions(t *testing.T) {
	s := memstore.New()
	first := commit(t, s, registry.Write{Resource: "r", Record: &lockstate.Record{HighestFence: 1}})
	img := s.Image()
	cached := commit(t, s, registry.Write{Resource: "r", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 2}})
	s.Restore(img, memstore.BumpRevisions)
	snap, err := s.Read(ctx, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Record.HighestFence != 1 || snap.RecordRev != first.Revision || snap.Revision <= cached.Revision {
		t.Fatalf("after the restore: fence %d at %d, store revision %d (was %d)", snap.Record.HighestFence, snap.RecordRev, snap.Revision, cached.Revision)
	}
	other := commit(t, s, registry.Write{Resource: "r", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 3}})
	if other.Revision <= snap.Revision {
		t.Fatalf("commit after the restore at %d, not above %d", other.Revision, snap.Revision)
	}
	stale, err := s.Commit(ctx, registry.Write{Resource: "r", RecordRev: cached.Revision, Record: &lockstate.Record{HighestFence: 4}})
	if err != nil || stale.OK {
		t.Fatalf("a write on the revision read before the restore: %+v %v", stale, err)
	}
}

// TestCommitHook: the hook sees every commit once, in revision order, with
// the state as stored just after it; a failed compare is not a commit; and
// what the hook does with what it reads does not change the store.
func TestCommitHook(t *testing.T) {
	s := memstore.New()
	var seen []uint64
	var kept *memstore.Committed
	s.OnCommit(func(c *memstore.Committed) {
		seen = append(seen, c.Revision)
		kept = c
		rec, err := c.Record()
		if err != nil {
			t.Fatal(err)
		}
		if c.RecordWritten {
			rec.HighestFence = 99 // a copy: the store keeps its own
		}
		if e, err := c.Request(lockstate.RequestKey{Owner: "o", RequestID: "1"}); err != nil || (len(c.Requests) > 0) != (e != nil) {
			t.Fatalf("revision %d: request entry %+v (%v) after writing %v", c.Revision, e, err, c.Requests)
		}
	})
	first := commit(t, s, registry.Write{Resource: "r", Record: &lockstate.Record{HighestFence: 1}})
	entry := &lockstate.RequestEntry{State: "HELD"}
	second := commit(t, s, registry.Write{Resource: "r", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 2},
		Requests: []registry.RequestWrite{{Key: lockstate.RequestKey{Owner: "o", RequestID: "1"}, Entry: entry}}})
	if res, _ := s.Commit(ctx, registry.Write{Resource: "r", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 7}}); res.OK {
		t.Fatal("stale compare committed")
	}
	if len(seen) != 2 || seen[0] != first.Revision || seen[1] != second.Revision {
		t.Fatalf("hook saw revisions %v, want [%d %d]", seen, first.Revision, second.Revision)
	}
	snap, err := s.Read(ctx, "r", nil)
	if err != nil || snap.Record.HighestFence != 2 {
		t.Fatalf("stored fence %d (%v): the hook changed what was committed", snap.Record.HighestFence, err)
	}
	if _, err := kept.Record(); err == nil {
		t.Fatal("a Committed read after its hook returned")
	}
	s.OnCommit(nil)
	commit(t, s, registry.Write{Resource: "r", RecordRev: second.Revision, Record: &lockstate.Record{HighestFence: 3}})
	if len(seen) != 2 {
		t.Fatal("a removed hook still ran")
	}
}

// TestCommitHookSeesSetMembers: the hook of a set write names the members
// it put (not those it only compared) and reads each as stored; a failed
// set write runs no hook; watchers of each member written see it.
func TestCommitHookSeesSetMembers(t *testing.T) {
	s := memstore.New()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := s.Watch(wctx, "set/b", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var fences []uint64
	s.OnCommit(func(c *memstore.Committed) {
		got = append(got, c.Members...)
		for _, m := range c.Members {
			rec, err := c.RecordOf(m)
			if err != nil || rec == nil {
				t.Fatalf("%s: %+v, %v", m, rec, err)
			}
			fences = append(fences, rec.HighestFence)
		}
		if c.Resource != "" || c.RecordWritten {
			t.Fatalf("a set write's hook names a resource: %q %v", c.Resource, c.RecordWritten)
		}
	})
	res := commit(t, s, registry.Write{Members: []registry.MemberWrite{
		{Resource: "set/b", Record: &lockstate.Record{HighestFence: 2}},
		{Resource: "set/a"},
		{Resource: "set/c", Record: &lockstate.Record{HighestFence: 3}},
	}})
	if len(got) != 2 || got[0] != "set/b" || got[1] != "set/c" || fences[0] != 2 || fences[1] != 3 {
		t.Fatalf("hook saw members %v fences %v; want [set/b set/c] [2 3]", got, fences)
	}
	if r, _ := s.Commit(ctx, registry.Write{Members: []registry.MemberWrite{{Resource: "set/b", Record: &lockstate.Record{HighestFence: 9}}, {Resource: "set/a"}}}); r.OK {
		t.Fatal("a set write over a present member compared absent committed")
	}
	if len(got) != 2 {
		t.Fatalf("a failed set write ran the hook: %v", got)
	}
	ev := <-events
	if ev.ModRev != res.Revision || ev.Record.HighestFence != 2 {
		t.Fatalf("watch of a member: %+v, want fence 2 at %d", ev, res.Revision)
	}
}
