package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// independentWriters is how many goroutines commit at once, each on its own
// resource: enough for a store that groups commits to group them.
const independentWriters = 24

// testConcurrentIndependent: commits in flight together on distinct
// resources each succeed or fail by their own compares alone. Every writer
// creates its record, then half commit on the revision they created (and
// must succeed) while the other half commit as if the record were still
// absent or on the right revision with other contents than the record
// holds (and must fail, getting back their own record, untouched by the
// others' outcomes). Good commits name the contents they were decided on,
// so both kinds of compare run inside grouped transactions. Run once more
// with the roles swapped.
func testConcurrentIndependent(t *testing.T, s registry.Store) {
	revs := make([]uint64, independentWriters)
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, independentWriters)
		for i := range independentWriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := independentStep(s, i, round, revs); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	for i := range independentWriters {
		snap := mustRead(t, s, fmt.Sprint("ind/", i))
		if snap.RecordRev != revs[i] || snap.Record.HighestFence != uint64(independentFence(i, 2)) {
			t.Fatalf("writer %d: record %+v at %d, want fence %d at %d", i, snap.Record, snap.RecordRev, independentFence(i, 2), revs[i])
		}
	}
}

// independentFence is the fence writer i's record holds after round.
func independentFence(i, round int) int {
	if round == 0 {
		return 1
	}
	fence := 1
	for r := 1; r <= round; r++ {
		if (i+r)%2 == 0 {
			fence++
		}
	}
	return fence
}

// independentStep is writer i's commit in round: round 0 creates the
// record; later rounds commit on the right revision when (i+round) is
// even, on a stale one (absent) otherwise.
func independentStep(s registry.Store, i, round int, revs []uint64) error {
	resource := fmt.Sprint("ind/", i)
	good := round == 0 || (i+round)%2 == 0
	w := registry.Write{Resource: resource, Record: &lockstate.Record{HighestFence: uint64(independentFence(i, round))}}
	switch {
	case good:
		w.RecordRev = revs[i]
		if round > 0 {
			w.RecordWas = &lockstate.Record{HighestFence: uint64(independentFence(i, round-1))}
		}
	case i%4 < 2: // the right revision, other contents (an etcd restore)
		w.RecordRev = revs[i]
		w.RecordWas = &lockstate.Record{HighestFence: 999}
		w.Record = &lockstate.Record{HighestFence: 999}
	default: // as if the record were absent
		w.Record = &lockstate.Record{HighestFence: 999}
	}
	res, err := s.Commit(ctx, w)
	switch {
	case err != nil:
		return fmt.Errorf("writer %d round %d: %w", i, round, err)
	case good && !res.OK:
		return fmt.Errorf("writer %d round %d: a right compare failed (current record at %d, want %d)", i, round, res.Current.RecordRev, revs[i])
	case !good && res.OK:
		return fmt.Errorf("writer %d round %d: a stale compare succeeded", i, round)
	case !good && (res.Current.RecordRev != revs[i] || res.Current.Record == nil ||
		res.Current.Record.HighestFence != uint64(independentFence(i, round-1)) || res.Current.Revision < revs[i]):
		return fmt.Errorf("writer %d round %d: failed compare returned %+v, want its own record at %d", i, round, res.Current, revs[i])
	}
	if good {
		revs[i] = res.Revision
	}
	return nil
}

// testConcurrentCAS: goroutines increment one record's fence by
// read-compare-swap; every successful commit must count exactly once.
func testConcurrentCAS(t *testing.T, s registry.Store) {
	const workers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				snap, err := s.Read(ctx, "c/1", nil)
				if err != nil {
					errs <- err
					return
				}
				rec := &lockstate.Record{}
				if snap.Record != nil {
					rec.HighestFence = snap.Record.HighestFence
				}
				rec.HighestFence++
				res, err := s.Commit(ctx, registry.Write{Resource: "c/1", RecordRev: snap.RecordRev, SettingsRev: snap.SettingsRev, Record: rec})
				if err != nil {
					errs <- err
					return
				}
				if res.OK {
					done++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := mustRead(t, s, "c/1").Record.HighestFence; got != workers*each {
		t.Fatalf("counter %d, want %d: a compare-and-swap lost an update", got, workers*each)
	}
}
