// This file proves group commit keeps each write's own outcome: writes
// sent in one etcd transaction succeed or fail by their own compares (a
// failed one gets its own fresh snapshot), share one revision, and never
// share a key; writes expecting the same settings share one compare of
// them, and none commits once they moved; a group etcd refuses (a duplicate key) is resent write by
// write; a commit withdrawn while queued is never sent; and the store
// passes the conformance suite with grouping off as well as on.
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/storetest"
)

func TestConformanceUngrouped(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store {
		return New(testClient, fmt.Sprintf("/test-%d/", prefixSeq.Add(1)), WithBatching(1, 0))
	})
}

// groupOf builds pending commits without queueing them.
func groupOf(s *Store, ws ...registry.Write) []*pending {
	var g []*pending
	for _, w := range ws {
		g = append(g, s.newPending(context.Background(), w))
	}
	return g
}

func TestGroupKeepsEachWritesOutcome(t *testing.T) {
	s := freshStore(t)
	ctx := context.Background()
	base, err := s.Commit(ctx, registry.Write{Resource: "g/old", Record: &lockstate.Record{HighestFence: 4}})
	if err != nil || !base.OK {
		t.Fatalf("setup: %+v %v", base, err)
	}
	k := lockstate.RequestKey{Owner: "w", RequestID: "r1"}
	ws := []registry.Write{
		{Resource: "g/a", Record: &lockstate.Record{HighestFence: 1}},
		{Resource: "g/old", Record: &lockstate.Record{HighestFence: 9}, ReadKeys: []lockstate.RequestKey{k}}, // stale: compares absent
		{Resource: "g/b", Record: &lockstate.Record{HighestFence: 2},
			Requests: []registry.RequestWrite{{Key: k, Compare: true, Entry: heldEntry("g/b", "w", "r1", 2)}}},
	}
	g := groupOf(s, ws...)
	txns := s.batch.txns.Load()
	s.batch.send(g)
	if n := s.batch.txns.Load() - txns; n != 1 {
		t.Fatalf("%d transactions for one group", n)
	}
	for i, p := range g {
		if p.err != nil {
			t.Fatalf("write %d: %v", i, p.err)
		}
	}
	if !g[0].res.OK || !g[2].res.OK || g[0].res.Revision != g[2].res.Revision {
		t.Fatalf("the good writes: %+v, %+v (one revision expected)", g[0].res, g[2].res)
	}
	cur := g[1].res.Current
	if g[1].res.OK || cur.RecordRev != base.Revision || cur.Record.HighestFence != 4 || len(cur.Requests) != 1 {
		t.Fatalf("the stale write: %+v", g[1].res)
	}
	if cur.Requests[0].Entry != nil || cur.Revision < base.Revision {
		t.Fatalf("the stale write's snapshot shows another write's entry or an old revision: %+v", cur)
	}
	snap, err := s.Read(ctx, "g/b", []lockstate.RequestKey{k})
	if err != nil || snap.RecordRev != g[2].res.Revision || snap.Requests[0].CreateRev != g[2].res.Revision {
		t.Fatalf("read back: %+v %v", snap, err)
	}
	if old, _ := s.Read(ctx, "g/old", nil); old.Record.HighestFence != 4 {
		t.Fatal("the failed write landed")
	}
}

// A group whose writes expect the same settings compares them once: a
// member failing its own compare still gets the settings in its snapshot
// (read once for the group). When the settings moved after the members
// read them, no member commits and each gets the new settings, as a lone
// commit would. Negative control: without the group's settings compare
// the stale writes below commit.
func TestGroupSharesOneSettingsCompare(t *testing.T) {
	for _, moved := range []bool{false, true} {
		t.Run(fmt.Sprint("moved=", moved), func(t *testing.T) {
			s := freshStore(t)
			ctx := context.Background()
			set, err := s.Commit(ctx, registry.Write{Settings: &lockstate.Settings{RevokedBelowEpoch: 1}})
			if err != nil || !set.OK {
				t.Fatalf("setup: %+v %v", set, err)
			}
			old, err := s.Commit(ctx, registry.Write{Resource: "s/old", Record: &lockstate.Record{HighestFence: 4}, SettingsRev: set.Revision})
			if err != nil || !old.OK {
				t.Fatalf("setup: %+v %v", old, err)
			}
			ws := []registry.Write{
				{Resource: "s/a", Record: &lockstate.Record{HighestFence: 1}, SettingsRev: set.Revision},
				{Resource: "s/old", Record: &lockstate.Record{HighestFence: 9}, SettingsRev: set.Revision}, // stale record
				{Resource: "s/b", Record: &lockstate.Record{HighestFence: 2}, SettingsRev: set.Revision},
			}
			wantSet, wantRev := uint64(1), set.Revision
			if moved {
				now, err := s.Commit(ctx, registry.Write{Settings: &lockstate.Settings{RevokedBelowEpoch: 2}, SettingsRev: set.Revision})
				if err != nil || !now.OK {
					t.Fatalf("moving the settings: %+v %v", now, err)
				}
				wantSet, wantRev = 2, now.Revision
			}
			g := groupOf(s, ws...)
			if !sharedSettings(g) {
				t.Fatal("the writes expect the same settings but do not share their compare")
			}
			s.batch.send(g)
			for i, p := range g {
				if p.err != nil {
					t.Fatalf("write %d: %v", i, p.err)
				}
				stale := moved || i == 1
				if p.res.OK == stale {
					t.Fatalf("write %d: committed %v, want %v", i, p.res.OK, !stale)
				}
				if cur := p.res.Current; stale && (cur.Settings.RevokedBelowEpoch != wantSet || cur.SettingsRev != wantRev) {
					t.Fatalf("write %d's snapshot shows settings %+v at %d, want epoch %d at %d", i, cur.Settings, cur.SettingsRev, wantSet, wantRev)
				}
			}
			if moved {
				if snap, _ := s.Read(ctx, "s/a", nil); snap.Record != nil {
					t.Fatal("a write decided on moved settings landed")
				}
			}
		})
	}
}

// Writes expecting different settings (a revision, contents) each keep
// their own compare.
func TestGroupOfDifferentSettingsKeepsOwnCompares(t *testing.T) {
	s := freshStore(t)
	g := groupOf(s,
		registry.Write{Resource: "d/a", Record: &lockstate.Record{HighestFence: 1}},
		registry.Write{Resource: "d/b", Record: &lockstate.Record{HighestFence: 1}, SettingsWas: &lockstate.Settings{}},
	)
	if sharedSettings(g) {
		t.Fatal("a revision compare and a contents compare were taken for one")
	}
	s.batch.send(g)
	if g[0].err != nil || g[1].err != nil || !g[0].res.OK || g[1].res.OK {
		t.Fatalf("outcomes: %+v %v, %+v %v (the second names settings that do not exist)", g[0].res, g[0].err, g[1].res, g[1].err)
	}
}

func TestGroupNeverSharesAKey(t *testing.T) {
	s := freshStore(t)
	k := lockstate.RequestKey{Owner: "w", RequestID: "r1"}
	g := groupOf(s,
		registry.Write{Resource: "k/a", Record: &lockstate.Record{HighestFence: 1}},
		registry.Write{Resource: "k/a", Record: &lockstate.Record{HighestFence: 2}},                 // same record
		registry.Write{Resource: "k/b", Requests: []registry.RequestWrite{{Key: k, Compare: true}}}, // compares r1
		registry.Write{Resource: "k/c", ReadKeys: []lockstate.RequestKey{k}},                        // reads r1
		registry.Write{Resource: "k/d", Record: &lockstate.Record{HighestFence: 1}},
	)
	admit := s.batch.group()
	var taken, left []*pending
	for _, p := range g {
		if admit(p) {
			taken = append(taken, p)
		} else {
			left = append(left, p)
		}
	}
	if len(taken) != 3 || taken[0] != g[0] || taken[1] != g[2] || taken[2] != g[4] {
		t.Fatalf("took %d writes: %v", len(taken), taken)
	}
	if len(left) != 2 || left[0] != g[1] || left[1] != g[3] {
		t.Fatalf("left %d queued", len(left))
	}
}

func TestRefusedGroupIsResentWriteByWrite(t *testing.T) {
	s := freshStore(t)
	// Two writes of one key in one transaction: etcd refuses the request
	// as a whole, applying nothing; resent alone, the first wins and the
	// second fails its compare.
	g := groupOf(s,
		registry.Write{Resource: "dup/1", Record: &lockstate.Record{HighestFence: 1}},
		registry.Write{Resource: "dup/1", Record: &lockstate.Record{HighestFence: 2}},
	)
	s.batch.send(g)
	if g[0].err != nil || g[1].err != nil {
		t.Fatalf("errors: %v, %v", g[0].err, g[1].err)
	}
	if !g[0].res.OK || g[1].res.OK || g[1].res.Current.Record.HighestFence != 1 {
		t.Fatalf("outcomes: %+v, %+v", g[0].res, g[1].res)
	}
}

// holdSlots makes every one of s's grouping slots busy with a commit
// that waits (before it is sent) until release is called; the commits
// made meanwhile queue. release lets them go and waits for their
// outcomes.
func holdSlots(t *testing.T, s *Store) (release func()) {
	b := s.batch
	gate, held := make(chan struct{}), make(chan struct{}, b.opt.BatchInflightMax)
	send := b.q.Send
	b.q.Send = func(g []*pending) {
		select {
		case held <- struct{}{}:
		default:
		}
		<-gate
		send(g)
	}
	var wg sync.WaitGroup
	for i := range b.opt.BatchInflightMax {
		wg.Go(func() {
			if _, err := s.Commit(context.Background(), registry.Write{Resource: fmt.Sprint("hold/", i), Record: &lockstate.Record{HighestFence: 1}}); err != nil {
				t.Error(err)
			}
		})
	}
	for range b.opt.BatchInflightMax {
		<-held
	}
	return func() {
		close(gate)
		wg.Wait()
	}
}

// waitQueued waits until n commits of s are queued.
func waitQueued(t *testing.T, s *Store, n int) {
	for i := 0; s.batch.q.Queued() < n; i++ {
		if i == 10_000 {
			t.Fatalf("%d commits queued, want %d", s.batch.q.Queued(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestWithdrawnWhileQueuedIsNeverSent(t *testing.T) {
	s := freshStore(t)
	release := holdSlots(t, s) // every slot busy: the commit queues
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Commit(ctx, registry.Write{Resource: "wd/1", Record: &lockstate.Record{HighestFence: 1}})
		done <- err
	}()
	waitQueued(t, s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if left := s.batch.q.Queued(); left != 0 {
		t.Fatalf("%d commits still queued", left)
	}
	release()
	if snap, err := s.Read(context.Background(), "wd/1", nil); err != nil || snap.Record != nil {
		t.Fatalf("the withdrawn write landed: %+v %v", snap.Record, err)
	}
}

func TestQueuedCommitsGoInOneTransaction(t *testing.T) {
	s := freshStore(t)
	release := holdSlots(t, s) // every slot busy: commits queue
	const n = 12
	errs := make(chan error, n)
	for i := range n {
		go func() {
			res, err := s.Commit(context.Background(), registry.Write{Resource: fmt.Sprint("q/", i), Record: &lockstate.Record{HighestFence: 1}})
			if err == nil && !res.OK {
				err = fmt.Errorf("write %d failed its compare", i)
			}
			errs <- err
		}()
	}
	waitQueued(t, s, n)
	b := s.batch
	txns := b.txns.Load()
	release() // the busy slots free: the first to finish sends the queue
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Each held commit is a transaction of its own; the queue is one more.
	if got, want := b.txns.Load()-txns, uint64(b.opt.BatchInflightMax)+1; got != want {
		t.Fatalf("%d held and %d queued commits took %d transactions, want %d", b.opt.BatchInflightMax, n, got, want)
	}
}

func heldEntry(resource, owner, id string, fence uint64) *lockstate.RequestEntry {
	return &lockstate.RequestEntry{
		Grant: lockstate.GrantBody{
			Resource: resource, Owner: owner, RequestID: id, Lease: "l1",
			OperationRoot: grant.OperationRoot(resource, "op").String(), OperationClass: "settle",
			FenceToken: fence, IssuerEpoch: 1, TTLMs: 1000, IssuedAtMs: 1_700_000_000_000,
		},
		ParamsDigest: "p", State: grant.StateHeld,
	}
}

// batchStats returns how many transactions st's grouping sent and how
// many writes they carried (the benchmarks report their ratio).
func batchStats(st *Store) (txns, writes uint64) {
	if st.batch == nil {
		return 0, 0
	}
	return st.batch.txns.Load(), st.batch.writes.Load()
}

// Commits of one key go in the order they were made, each once the one
// before has its outcome: a write decided on the record a commit still in
// flight puts (a release answered early, then an acquire) is not sent
// before it, where it would fail its compare. Here the first commit is
// held before it is sent, a slot stays free, and the second, made
// meanwhile, waits instead of taking the slot; both then commit.
// Negative control: without batcher.after the second is sent at once,
// ahead of the first, and fails its compare.
func TestCommitsOfOneKeyGoInOrder(t *testing.T) {
	s := freshStore(t)
	b := s.batch
	gate, held := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var sent []uint64
	send := b.q.Send
	b.q.Send = func(g []*pending) {
		for _, p := range g {
			mu.Lock()
			sent = append(sent, p.w.Record.HighestFence)
			mu.Unlock()
			if p.w.Record.HighestFence == 1 {
				close(held)
				<-gate
			}
		}
		send(g)
	}
	first := &lockstate.Record{HighestFence: 1}
	errs := make(chan error, 2)
	results := make([]registry.CommitResult, 2)
	go func() {
		var err error
		results[0], err = s.Commit(context.Background(), registry.Write{Resource: "o/1", Record: first})
		errs <- err
	}()
	<-held // the first is on its way, its slot busy; the other slot is free
	go func() {
		var err error
		results[1], err = s.Commit(context.Background(), registry.Write{Resource: "o/1", RecordWas: first, Record: &lockstate.Record{HighestFence: 2}})
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	early := len(sent)
	mu.Unlock()
	close(gate)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if early != 1 {
		t.Errorf("the second commit of o/1 was sent while the first was in flight (sent: %v)", sent)
	}
	if !results[0].OK || !results[1].OK || results[1].Revision <= results[0].Revision {
		t.Fatalf("outcomes %+v, %+v: want both committed, in order", results[0], results[1])
	}
	if left := len(b.last); left != 0 {
		t.Fatalf("%d keys still name a commit in flight", left)
	}
}

// A commit waiting for an earlier one of its key that is withdrawn (its
// caller gave up while it waited) is sent at once, not left queued until
// some other group ends. Here the first commit of a key is held in
// flight, the second waits for it, the third for the second; the second
// is withdrawn, and the third commits while the first is still held (a
// commit of another key meanwhile is not held back at all).
// Negative control: without the kick in batcher.forget the third waits
// for the first.
func TestCommitAfterWithdrawnGoes(t *testing.T) {
	s := freshStore(t)
	b := s.batch
	gate, held := make(chan struct{}), make(chan struct{})
	send := b.q.Send
	b.q.Send = func(g []*pending) {
		for _, p := range g {
			if p.w.Record.HighestFence == 1 {
				close(held)
				<-gate
			}
		}
		send(g)
	}
	defer close(gate)
	first := make(chan error, 1)
	go func() {
		_, err := s.Commit(context.Background(), registry.Write{Resource: "w/1", Record: &lockstate.Record{HighestFence: 1}})
		first <- err
	}()
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := s.Commit(ctx, registry.Write{Resource: "w/1", Record: &lockstate.Record{HighestFence: 2}})
		second <- err
	}()
	waitQueued(t, s, 1)
	third := make(chan registry.CommitResult, 1)
	go func() {
		res, err := s.Commit(context.Background(), registry.Write{Resource: "w/2", Record: &lockstate.Record{HighestFence: 3}})
		if err != nil {
			t.Error(err)
		}
		third <- res
	}()
	<-third // another key: not held back
	last := make(chan error, 1)
	go func() {
		_, err := s.Commit(context.Background(), registry.Write{Resource: "w/1", Record: &lockstate.Record{HighestFence: 4}})
		last <- err
	}()
	waitQueued(t, s, 2)
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("the withdrawn commit: %v", err)
	}
	select {
	case err := <-last:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the commit after a withdrawn one stayed queued while a slot was free")
	}
}
