package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// Lock sets (registry.Store, "Lock sets"): ReadSet reads every member as
// of one linearizable revision; a set write compares every member and
// writes all of it or nothing; its failure returns every member. Each row
// checks a store through a function that returns what it found wrong, and
// where a broken store is cheap to build (a wrapper over the store under
// test) runs the same check on it and requires it to find the fault.

// RunLockSets runs the lock-set rows (Run runs them too).
func RunLockSets(t *testing.T, newStore NewStore) {
	t.Run("SetCreateThenReadSet", func(t *testing.T) { testSetCreate(t, newStore) })
	t.Run("SetAllOrNothing", func(t *testing.T) { testSetAllOrNothing(t, newStore) })
	t.Run("SetFailureNamesEveryMember", func(t *testing.T) { testSetCurrent(t, newStore) })
	t.Run("SetRacesPlainWrite", func(t *testing.T) { testSetRace(t, newStore) })
	t.Run("SetMalformedRefusedUnsent", func(t *testing.T) { testSetMalformed(t, newStore(t)) })
	t.Run("ReadSetLinearizable", func(t *testing.T) { testReadSetLinearizable(t, newStore) })
}

func fenceRec(f uint64) *lockstate.Record { return &lockstate.Record{HighestFence: f, Floor: 1} }

func mustReadSet(t *testing.T, s registry.Store, members []string, keys ...lockstate.RequestKey) registry.Snapshot {
	t.Helper()
	snap, err := s.ReadSet(ctx, members, keys)
	if err != nil {
		t.Fatalf("read set: %v", err)
	}
	return snap
}

// fenceOf is a member's fence as read, 0 when absent.
func fenceOf(m registry.MemberSlot) uint64 {
	if m.Record == nil {
		return 0
	}
	return m.Record.HighestFence
}

// requireControl fails t unless check found the fault a broken store was
// built to have.
func requireControl(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("negative control (%s): the check passed a store built to fail it", what)
	}
	t.Logf("negative control (%s) caught: %v", what, err)
}

// checkSetCreate: a set write over absent members (RecordRev 0), one only
// compared, creates the written ones at its revision with its entry;
// ReadSet then shows every member (the compared one still absent) in
// the order asked, and a plain create of the compared one still works.
func checkSetCreate(s registry.Store, prefix string) error {
	a, b, c := prefix+"/a", prefix+"/b", prefix+"/c"
	k := key("set-owner", "set-req")
	before, err := s.ReadSet(ctx, []string{c, a, b}, []lockstate.RequestKey{k})
	if err != nil {
		return err
	}
	for _, m := range before.Members {
		if m.Record != nil || m.RecordRev != 0 || m.RecordRaw != nil {
			return fmt.Errorf("empty read set: member %+v", m)
		}
	}
	res, err := s.Commit(ctx, registry.Write{
		Members:  []registry.MemberWrite{{Resource: a, Record: fenceRec(1)}, {Resource: b}, {Resource: c, Record: fenceRec(1)}},
		Requests: []registry.RequestWrite{{Key: k, Compare: true, Entry: entry(a, "set-owner", "set-req", 1)}},
	})
	if err != nil || !res.OK {
		return fmt.Errorf("set create: %+v, %v", res, err)
	}
	snap, err := s.ReadSet(ctx, []string{c, a, b}, []lockstate.RequestKey{k})
	if err != nil {
		return err
	}
	if snap.Revision < res.Revision || snap.Resource != "" || snap.Record != nil || len(snap.Members) != 3 {
		return fmt.Errorf("read set after the commit at %d: revision %d, resource %q, %d members", res.Revision, snap.Revision, snap.Resource, len(snap.Members))
	}
	for i, want := range []struct {
		name  string
		fence uint64
		rev   uint64
	}{{c, 1, res.Revision}, {a, 1, res.Revision}, {b, 0, 0}} {
		m := snap.Members[i]
		if m.Resource != want.name || fenceOf(m) != want.fence || m.RecordRev != want.rev || (m.RecordRaw == nil) != (want.rev == 0) {
			return fmt.Errorf("member %d: %s fence %d at %d (raw %d bytes); want %s fence %d at %d", i, m.Resource, fenceOf(m), m.RecordRev, len(m.RecordRaw), want.name, want.fence, want.rev)
		}
	}
	if len(snap.Requests) != 1 || snap.Requests[0].Entry == nil || snap.Requests[0].ModRev != res.Revision {
		return fmt.Errorf("the set's entry: %+v", snap.Requests)
	}
	// The read is consistent with a plain Read of each member.
	for _, m := range snap.Members {
		one, err := s.Read(ctx, m.Resource, nil)
		if err != nil {
			return err
		}
		if one.RecordRev != m.RecordRev {
			return fmt.Errorf("%s: Read says revision %d, ReadSet %d", m.Resource, one.RecordRev, m.RecordRev)
		}
	}
	if res, err := s.Commit(ctx, registry.Write{Resource: b, Record: fenceRec(7)}); err != nil || !res.OK {
		return fmt.Errorf("a plain create of the member the set only compared absent: %+v, %v", res, err)
	}
	return nil
}

func testSetCreate(t *testing.T, newStore NewStore) {
	if err := checkSetCreate(newStore(t), "create"); err != nil {
		t.Fatal(err)
	}
	requireControl(t, "a ReadSet that reads each member a revision late", checkSetCreate(&laggingSet{Store: newStore(t)}, "create"))
}

// setFixture creates n members (fence i+1 each, one plain commit each)
// and returns their names and the slots read.
func setFixture(s registry.Store, prefix string, n int) ([]string, []registry.MemberSlot, error) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s/m%02d", prefix, i)
		if res, err := s.Commit(ctx, registry.Write{Resource: names[i], Record: fenceRec(uint64(i + 1))}); err != nil || !res.OK {
			return nil, nil, fmt.Errorf("create %s: %+v, %v", names[i], res, err)
		}
	}
	snap, err := s.ReadSet(ctx, names, nil)
	if err != nil {
		return nil, nil, err
	}
	return names, snap.Members, nil
}

// checkSetAllOrNothing: a set write over 8 members, each compared at the
// revision (or on the contents) read, but one stale, writing every
// member, an entry, a sweep item and the settings, fails and writes none
// of them; with no member stale, the same write applies all of it at one
// revision. The stale member is each position in turn, compared by
// revision and by contents.
func checkSetAllOrNothing(s registry.Store, prefix string) error {
	const n = 8
	names, slots, err := setFixture(s, prefix, n)
	if err != nil {
		return err
	}
	for stale := range n {
		byContents := stale%2 == 1
		k := key("aon", fmt.Sprint("r", stale))
		item := sweepItem(int64(1000+stale), "aon", k.RequestID, names[0])
		settings, err := s.Read(ctx, "", nil)
		if err != nil {
			return err
		}
		w := registry.Write{
			SettingsRev: settings.SettingsRev, Settings: &lockstate.Settings{FenceGeneration: uint64(stale + 1)},
			Requests: []registry.RequestWrite{{Key: k, Compare: true, Entry: entry(names[0], "aon", k.RequestID, 9)}},
			Sweeps:   []registry.SweepWrite{{Item: item}},
		}
		for i, m := range slots {
			mw := registry.MemberWrite{Resource: m.Resource, RecordRev: m.RecordRev, Record: fenceRec(fenceOf(m) + 100)}
			if byContents {
				mw.RecordWas, mw.RecordWasRaw = m.Record, m.RecordRaw
			}
			if i == stale {
				if byContents {
					mw.RecordWas, mw.RecordWasRaw = fenceRec(fenceOf(m)+50), nil // other contents
				} else {
					mw.RecordRev = m.RecordRev - 1
				}
			}
			w.Members = append(w.Members, mw)
		}
		res, err := s.Commit(ctx, w)
		if err != nil {
			return fmt.Errorf("stale member %d: %w", stale, err)
		}
		after, err := s.ReadSet(ctx, names, []lockstate.RequestKey{k})
		if err != nil {
			return err
		}
		items, err := s.ScanSweep(ctx, registry.SweepItem{}, math.MaxInt64, 100)
		if err != nil {
			return err
		}
		if res.OK {
			return fmt.Errorf("stale member %d (by contents: %v): the set write succeeded", stale, byContents)
		}
		for i, m := range after.Members {
			if m.RecordRev != slots[i].RecordRev || fenceOf(m) != fenceOf(slots[i]) {
				return fmt.Errorf("stale member %d: the failed set write changed member %d: fence %d at %d, was %d at %d",
					stale, i, fenceOf(m), m.RecordRev, fenceOf(slots[i]), slots[i].RecordRev)
			}
		}
		if after.Requests[0].Entry != nil || after.SettingsRev != settings.SettingsRev || len(items) != 0 {
			return fmt.Errorf("stale member %d: the failed set write left its entry (%v), settings (rev %d, was %d) or sweep items %v",
				stale, after.Requests[0].Entry != nil, after.SettingsRev, settings.SettingsRev, items)
		}
	}
	// The same write without a stale member applies every part of it.
	k := key("aon", "good")
	w := registry.Write{Requests: []registry.RequestWrite{{Key: k, Compare: true, Entry: entry(names[0], "aon", "good", 9)}}}
	for _, m := range slots {
		w.Members = append(w.Members, registry.MemberWrite{Resource: m.Resource, RecordRev: m.RecordRev, RecordWas: m.Record, RecordWasRaw: m.RecordRaw, Record: fenceRec(fenceOf(m) + 100)})
	}
	res, err := s.Commit(ctx, w)
	if err != nil || !res.OK {
		return fmt.Errorf("the set write without a stale member: %+v, %v", res, err)
	}
	after, err := s.ReadSet(ctx, names, []lockstate.RequestKey{k})
	if err != nil {
		return err
	}
	for i, m := range after.Members {
		if m.RecordRev != res.Revision || fenceOf(m) != fenceOf(slots[i])+100 {
			return fmt.Errorf("member %d after the set write at %d: fence %d at %d", i, res.Revision, fenceOf(m), m.RecordRev)
		}
	}
	if after.Requests[0].ModRev != res.Revision {
		return fmt.Errorf("the set's entry at %d, want %d", after.Requests[0].ModRev, res.Revision)
	}
	return nil
}

func testSetAllOrNothing(t *testing.T, newStore NewStore) {
	if err := checkSetAllOrNothing(newStore(t), "aon"); err != nil {
		t.Fatal(err)
	}
	requireControl(t, "a store that commits members one by one", checkSetAllOrNothing(oneByOne{newStore(t)}, "aon"))
}

// checkSetCurrent: a failed set write's Current holds every member in the
// write's order (an absent one as absent), read at or after the revision
// that made the compare fail, with the settings and ReadKeys.
func checkSetCurrent(s registry.Store, prefix string) error {
	names, slots, err := setFixture(s, prefix, 4)
	if err != nil {
		return err
	}
	moved, err := s.Commit(ctx, registry.Write{Resource: names[2], RecordRev: slots[2].RecordRev, Record: fenceRec(42)})
	if err != nil || !moved.OK {
		return fmt.Errorf("move member 2: %+v, %v", moved, err)
	}
	k := key("cur", "r1")
	if res, err := s.Commit(ctx, registry.Write{Requests: []registry.RequestWrite{{Key: k, Entry: entry(names[0], "cur", "r1", 3)}}}); err != nil || !res.OK {
		return fmt.Errorf("entry: %+v, %v", res, err)
	}
	absent := prefix + "/absent"
	order := []int{3, 2, 0, 1} // not the names' order
	var w registry.Write
	for _, i := range order {
		w.Members = append(w.Members, registry.MemberWrite{Resource: names[i], RecordRev: slots[i].RecordRev, Record: fenceRec(99)})
	}
	w.Members = append(w.Members, registry.MemberWrite{Resource: absent, Record: fenceRec(99)})
	w.ReadKeys = []lockstate.RequestKey{k, key("cur", "none")}
	res, err := s.Commit(ctx, w)
	if err != nil || res.OK {
		return fmt.Errorf("the set write over a moved member: %+v, %v", res, err)
	}
	cur := res.Current
	if cur.Revision < moved.Revision || len(cur.Members) != len(w.Members) {
		return fmt.Errorf("current at %d (member moved at %d), %d members for %d", cur.Revision, moved.Revision, len(cur.Members), len(w.Members))
	}
	for j, i := range order {
		m, want := cur.Members[j], slots[i]
		if i == 2 {
			want.RecordRev, want.Record = moved.Revision, fenceRec(42)
		}
		if m.Resource != names[i] || m.RecordRev != want.RecordRev || fenceOf(m) != fenceOf(want) || m.RecordRaw == nil {
			return fmt.Errorf("current member %d: %s fence %d at %d; want %s fence %d at %d", j, m.Resource, fenceOf(m), m.RecordRev, names[i], fenceOf(want), want.RecordRev)
		}
	}
	if m := cur.Members[len(order)]; m.Resource != absent || m.Record != nil || m.RecordRev != 0 {
		return fmt.Errorf("current absent member: %+v", m)
	}
	if len(cur.Requests) != 2 || cur.Requests[0].Key != k || cur.Requests[0].Entry == nil || cur.Requests[1].Entry != nil {
		return fmt.Errorf("current request entries: %+v", cur.Requests)
	}
	if cur.Resource != "" || cur.Record != nil {
		return fmt.Errorf("current of a set write names a resource: %q %+v", cur.Resource, cur.Record)
	}
	return nil
}

func testSetCurrent(t *testing.T, newStore NewStore) {
	if err := checkSetCurrent(newStore(t), "cur"); err != nil {
		t.Fatal(err)
	}
	requireControl(t, "a store whose failure returns only the member that failed", checkSetCurrent(staleOnlyCurrent{newStore(t)}, "cur"))
}

// setRaceRounds is how many times a set write and a plain write race on a
// shared member.
const setRaceRounds = 60

// checkSetRace: each round a set write over three members and a plain
// write on the middle one, both decided on the same read, go at once
// (beside an unrelated write, so a store that groups commits may group
// the set write): exactly one of the two wins, and the members then hold
// exactly the winner's writes.
func checkSetRace(s registry.Store, prefix string, setWins *int) error {
	names, slots, err := setFixture(s, prefix, 3)
	if err != nil {
		return err
	}
	other := prefix + "/other"
	var otherRev uint64
	for round := range setRaceRounds {
		fence := uint64(1000 * (round + 1))
		var set registry.Write
		for _, m := range slots {
			set.Members = append(set.Members, registry.MemberWrite{Resource: m.Resource, RecordRev: m.RecordRev, RecordWas: m.Record, RecordWasRaw: m.RecordRaw, Record: fenceRec(fence + 1)})
		}
		mid := slots[1]
		plain := registry.Write{Resource: mid.Resource, RecordRev: mid.RecordRev, RecordWas: mid.Record, RecordWasRaw: mid.RecordRaw, Record: fenceRec(fence + 2)}
		unrelated := registry.Write{Resource: other, RecordRev: otherRev, Record: fenceRec(fence)}
		var (
			start                         = make(chan struct{})
			wg                            sync.WaitGroup
			setRes, plainRes, unrelRes    registry.CommitResult
			setErr, plainErr, unrelatedEr error
		)
		wg.Add(3)
		go func() { defer wg.Done(); <-start; setRes, setErr = s.Commit(ctx, set) }()
		go func() { defer wg.Done(); <-start; plainRes, plainErr = s.Commit(ctx, plain) }()
		go func() { defer wg.Done(); <-start; unrelRes, unrelatedEr = s.Commit(ctx, unrelated) }()
		close(start)
		wg.Wait()
		if err := errors.Join(setErr, plainErr, unrelatedEr); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		if !unrelRes.OK {
			return fmt.Errorf("round %d: the unrelated write failed", round)
		}
		otherRev = unrelRes.Revision
		if setRes.OK == plainRes.OK {
			return fmt.Errorf("round %d: set write ok=%v, plain write ok=%v; exactly one must win", round, setRes.OK, plainRes.OK)
		}
		if setRes.OK {
			*setWins++
		}
		snap, err := s.ReadSet(ctx, names, nil)
		if err != nil {
			return err
		}
		for i, m := range snap.Members {
			want, rev := fenceOf(slots[i]), slots[i].RecordRev
			switch {
			case setRes.OK:
				want, rev = fence+1, setRes.Revision
			case i == 1:
				want, rev = fence+2, plainRes.Revision
			}
			if fenceOf(m) != want || m.RecordRev != rev {
				return fmt.Errorf("round %d (set won: %v): member %d holds fence %d at %d, want %d at %d", round, setRes.OK, i, fenceOf(m), m.RecordRev, want, rev)
			}
		}
		slots = snap.Members
	}
	return nil
}

func testSetRace(t *testing.T, newStore NewStore) {
	var setWins, blind int
	if err := checkSetRace(newStore(t), "race", &setWins); err != nil {
		t.Fatal(err)
	}
	t.Logf("the set write won %d of %d rounds, the plain write the others", setWins, setRaceRounds)
	requireControl(t, "a store whose set write compares members against what it finds", checkSetRace(blindSet{newStore(t)}, "race", &blind))
}

// testSetMalformed: a set write naming a member twice, an empty member or
// a Resource beside Members, and a ReadSet naming one twice, are refused
// with registry.ErrMemberSet and write nothing; the same write with
// distinct members goes through (so the refusal is the duplicate's).
func testSetMalformed(t *testing.T, s registry.Store) {
	k := key("dup", "r1")
	good := func() registry.Write {
		return registry.Write{
			Members:  []registry.MemberWrite{{Resource: "dup/a", Record: fenceRec(1)}, {Resource: "dup/b", Record: fenceRec(1)}},
			Requests: []registry.RequestWrite{{Key: k, Compare: true, Entry: entry("dup/a", "dup", "r1", 1)}},
		}
	}
	bad := map[string]func(w *registry.Write){
		"a member twice":        func(w *registry.Write) { w.Members[1].Resource = "dup/a" },
		"a member twice, apart": func(w *registry.Write) { w.Members = append(w.Members, registry.MemberWrite{Resource: "dup/a"}) },
		"an empty member":       func(w *registry.Write) { w.Members[1].Resource = "" },
		"Resource beside Members": func(w *registry.Write) {
			w.Resource, w.Record = "dup/c", fenceRec(1)
		},
	}
	for name, spoil := range bad {
		w := good()
		spoil(&w)
		res, err := s.Commit(ctx, w)
		if !errors.Is(err, registry.ErrMemberSet) || res.OK {
			t.Fatalf("%s: %+v, %v; want an error wrapping ErrMemberSet", name, res, err)
		}
	}
	if _, err := s.ReadSet(ctx, []string{"dup/a", "dup/b", "dup/a"}, nil); !errors.Is(err, registry.ErrMemberSet) {
		t.Fatalf("ReadSet naming a member twice: %v; want ErrMemberSet", err)
	}
	snap := mustReadSet(t, s, []string{"dup/a", "dup/b", "dup/c"}, k)
	for _, m := range snap.Members {
		if m.Record != nil {
			t.Fatalf("a refused write wrote %s", m.Resource)
		}
	}
	if snap.Requests[0].Entry != nil {
		t.Fatal("a refused write wrote its entry")
	}
	if res := mustCommit(t, s, good()); !res.OK {
		t.Fatalf("the same write with distinct members: %+v", res)
	}
}

// checkReadSetLinearizable: a ReadSet begun after a commit returned sees
// it, whether the commit was a set write or a plain write to one member,
// at a revision no lower than the commit's.
func checkReadSetLinearizable(s registry.Store, prefix string) error {
	names, slots, err := setFixture(s, prefix, 3)
	if err != nil {
		return err
	}
	for round := range 10 {
		var w registry.Write
		for _, m := range slots {
			w.Members = append(w.Members, registry.MemberWrite{Resource: m.Resource, RecordRev: m.RecordRev, Record: fenceRec(fenceOf(m) + 1)})
		}
		res, err := s.Commit(ctx, w)
		if err != nil || !res.OK {
			return fmt.Errorf("round %d: set write: %+v, %v", round, res, err)
		}
		snap, err := s.ReadSet(ctx, names, nil)
		if err != nil {
			return err
		}
		for i, m := range snap.Members {
			if snap.Revision < res.Revision || m.RecordRev != res.Revision || fenceOf(m) != fenceOf(slots[i])+1 {
				return fmt.Errorf("round %d: ReadSet after the set write at %d: revision %d, member %d at %d", round, res.Revision, snap.Revision, i, m.RecordRev)
			}
		}
		i := round % 3
		one, err := s.Commit(ctx, registry.Write{Resource: names[i], RecordRev: res.Revision, Record: fenceRec(fenceOf(snap.Members[i]) + 1)})
		if err != nil || !one.OK {
			return fmt.Errorf("round %d: plain write: %+v, %v", round, one, err)
		}
		if snap, err = s.ReadSet(ctx, names, nil); err != nil {
			return err
		}
		if snap.Revision < one.Revision || snap.Members[i].RecordRev != one.Revision {
			return fmt.Errorf("round %d: ReadSet after the plain write at %d: revision %d, member %d at %d", round, one.Revision, snap.Revision, i, snap.Members[i].RecordRev)
		}
		slots = snap.Members
	}
	return nil
}

func testReadSetLinearizable(t *testing.T, newStore NewStore) {
	if err := checkReadSetLinearizable(newStore(t), "lin"); err != nil {
		t.Fatal(err)
	}
	requireControl(t, "a ReadSet that reads each member a revision late", checkReadSetLinearizable(&laggingSet{Store: newStore(t)}, "lin"))
}

// The broken stores of the negative controls.

// oneByOne commits a set write as one plain write per member (the first
// carrying the rest of the write), in order, stopping at the first that
// fails: what a store without a multi-record transaction would do.
type oneByOne struct{ registry.Store }

func (o oneByOne) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if len(w.Members) == 0 {
		return o.Store.Commit(ctx, w)
	}
	members := w.Members
	var last registry.CommitResult
	for i, m := range members {
		one := registry.Write{Resource: m.Resource, RecordRev: m.RecordRev, RecordWas: m.RecordWas, RecordWasRaw: m.RecordWasRaw, Record: m.Record, ReadKeys: w.ReadKeys}
		if i == 0 {
			one.SettingsRev, one.SettingsWas, one.Settings = w.SettingsRev, w.SettingsWas, w.Settings
			one.Requests, one.Sweeps = w.Requests, w.Sweeps
		} else {
			cur, err := o.Store.Read(ctx, "", nil)
			if err != nil {
				return registry.CommitResult{}, err
			}
			one.SettingsRev = cur.SettingsRev
		}
		res, err := o.Store.Commit(ctx, one)
		if err != nil || !res.OK {
			return res, err
		}
		last = res
	}
	return last, nil
}

// staleOnlyCurrent answers a failed set write's Current with only the
// members whose compare failed.
type staleOnlyCurrent struct{ registry.Store }

func (c staleOnlyCurrent) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	res, err := c.Store.Commit(ctx, w)
	if err != nil || res.OK {
		return res, err
	}
	var kept []registry.MemberSlot
	for i, m := range res.Current.Members {
		if i < len(w.Members) && m.RecordRev != w.Members[i].RecordRev {
			kept = append(kept, m)
		}
	}
	res.Current.Members = kept
	return res, nil
}

// blindSet commits a set write on what it finds stored instead of what
// the write was decided on: a set write overwrites a concurrent plain
// write. It lets the racing writes go first (blindSetDelay), so that it
// finds them.
type blindSet struct{ registry.Store }

// blindSetDelay is how long blindSet waits before it reads: long beside
// a plain commit on any store under test.
const blindSetDelay = 20 * time.Millisecond

func (b blindSet) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if len(w.Members) == 0 {
		return b.Store.Commit(ctx, w)
	}
	time.Sleep(blindSetDelay)
	names := make([]string, len(w.Members))
	for i, m := range w.Members {
		names[i] = m.Resource
	}
	cur, err := b.Store.ReadSet(ctx, names, nil)
	if err != nil {
		return registry.CommitResult{}, err
	}
	w.Members = append([]registry.MemberWrite(nil), w.Members...)
	for i := range w.Members {
		w.Members[i].RecordRev, w.Members[i].RecordWas, w.Members[i].RecordWasRaw = cur.Members[i].RecordRev, nil, nil
	}
	return b.Store.Commit(ctx, w)
}

// laggingSet answers each ReadSet with the members as the previous ReadSet
// of them found (a follower a read behind).
type laggingSet struct {
	registry.Store
	mu   sync.Mutex
	last map[string]registry.MemberSlot
}

func (l *laggingSet) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	snap, err := l.Store.ReadSet(ctx, resources, keys)
	if err != nil {
		return snap, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]registry.MemberSlot{}
	}
	out := append([]registry.MemberSlot(nil), snap.Members...)
	for i, m := range snap.Members {
		if was, ok := l.last[m.Resource]; ok {
			out[i] = was
		}
		l.last[m.Resource] = m
	}
	snap.Members = out
	return snap, nil
}
