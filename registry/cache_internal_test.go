package registry

import (
	"testing"

	"github.com/fencegate/fencegate/registry/lockstate"
)

// TestReadOlderThanTheCacheAtItsRevisionReplacesIt: a linearizable read
// at a store revision the cached record had reached, showing the record
// older or absent, means the cached write is not in the store's history
// (a restore whose revisions have since passed it). The read replaces it.
// Kept, newerCached offered it to every decision as newer than the store:
// the simulator's restore-heavy run (seed 20261203, round 10923) spun in
// casLoopMode between the fresh read, which decided to write, and the
// cached record, on which nothing was to be written. Fails without the
// rule in rememberSnapshot.
func TestReadOlderThanTheCacheAtItsRevisionReplacesIt(t *testing.T) {
	const res = "probe/x"
	r := &Registry{cache: map[string]cachedRecord{}, cfg: Config{CacheResourcesMax: 16}}
	held := &lockstate.Record{Holder: &lockstate.Holder{Grant: lockstate.GrantBody{Resource: res, FenceToken: 3}}}
	r.rememberSnapshot(&Snapshot{Revision: 8, Resource: res, Record: held, RecordRev: 8})
	if _, ok := r.newerCached(res, nil, 0); !ok {
		t.Fatal("the cache does not hold the record at revision 8; this test shows nothing")
	}

	// After a restore to a store without the record, the store's
	// revisions passed 8 on other resources' commits.
	r.rememberSnapshot(&Snapshot{Revision: 12, Resource: res})
	if s, ok := r.newerCached(res, nil, 0); ok {
		t.Fatalf("a read at revision 12 showed %s absent, and the cache still offers it held at revision %d", res, s.RecordRev)
	}

	// A read that shows the cached record itself keeps it.
	r.rememberSnapshot(&Snapshot{Revision: 20, Resource: res, Record: held, RecordRev: 20})
	r.rememberSnapshot(&Snapshot{Revision: 20, Resource: res, Record: held, RecordRev: 20})
	if s, ok := r.newerCached(res, nil, 19); !ok || s.RecordRev != 20 {
		t.Fatalf("a read at the cached record's own revision dropped it: %+v, %v", s, ok)
	}
}
