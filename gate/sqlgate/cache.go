package sqlgate

import (
	"container/list"
	"sync"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// The cache holds, per resource, the last fence state this Gate saw
// stored, as the columns a read returns (stateScan) and their decoding,
// so that a warm Run decides without reading and stores with one
// statement that compares those columns with the stored ones (fast.go).
// It is never trusted for an answer: a decision on it stands only if the
// statement finds the database holding exactly those columns, and
// anything else goes the read-and-decide way. So it needs no
// invalidation: an operator action, another process's write or a
// transaction that did not commit leaves it behind the database, which
// costs one statement that stores nothing.

// CachedStatesMaxDefault bounds the resources whose state a Gate keeps
// when Config.CachedStatesMax is zero: about 300 bytes each.
const CachedStatesMaxDefault = 4096

// snapshot is a cached state: the columns as stored (compared) and their
// decoding (decided on). sc decodes to st exactly (put checks it), so a
// statement that finds sc stored finds the state a read would return.
type snapshot struct {
	sc stateScan
	st gate.FenceState
	// guarded: some table was protected when this state was read or
	// stored (SQLite's fast statement refuses to store if one is now).
	guarded bool
}

// stateCache is a bounded LRU of snapshots by resource; nil holds none.
type stateCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recently used; values are *cacheEntry
	by    map[string]*list.Element
}

type cacheEntry struct {
	resource string
	snap     snapshot
}

// newStateCache holds up to max states (CachedStatesMaxDefault for 0);
// a negative max holds none (nil).
func newStateCache(max int) *stateCache {
	switch {
	case max < 0:
		return nil
	case max == 0:
		max = CachedStatesMaxDefault
	}
	return &stateCache{max: max, order: list.New(), by: map[string]*list.Element{}}
}

// get returns the cached state of resource.
func (c *stateCache) get(resource string) (snapshot, bool) {
	if c == nil {
		return snapshot{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.by[resource]
	if !ok {
		return snapshot{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).snap, true
}

// put remembers st, read or stored, as the state of its resource, with
// guarded, evicting the least recently used resource past the bound. A
// state whose stored columns do not decode back to it exactly (an
// instant finer than a millisecond, say) is stored as their decoding. Of
// two writers the later put wins, newer or not: a cache behind the
// database costs one statement that stores nothing, never a wrong answer.
func (c *stateCache) put(st gate.FenceState, guarded bool) {
	if c == nil {
		return
	}
	sc := scanOf(st)
	dec, err := sc.state()
	if err != nil {
		c.forget(st.Resource)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.by[st.Resource]
	if ok {
		c.order.MoveToFront(el)
	} else {
		el = c.order.PushFront(&cacheEntry{resource: st.Resource})
		c.by[st.Resource] = el
	}
	el.Value.(*cacheEntry).snap = snapshot{sc: sc, st: dec, guarded: guarded}
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.by, old.Value.(*cacheEntry).resource)
	}
}

// forget drops the state of resource.
func (c *stateCache) forget(resource string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.by[resource]; ok {
		c.order.Remove(el)
		delete(c.by, resource)
	}
}

// scanOf is the columns a read of st returns (stateScan.state's inverse
// where st is representable: digests as 32 bytes, or none as empty; instants as
// Unix milliseconds, the zero time as 0).
func scanOf(st gate.FenceState) stateScan {
	sc := stateScan{resource: st.Resource, mode: string(st.Mode), reason: st.PausedReason,
		highest: int64(st.HighestFence), last: int64(st.LastSegmentSeq), minPol: int64(st.MinPolicyGeneration),
		grantIssuedMs: timeMs(st.GrantIssuedAt), floor: int64(st.Floor), floorMs: timeMs(st.FloorAt),
		root: digestBytes(st.Root), lastGrant: digestBytes(st.GrantDigest)}
	if st.Paused {
		sc.paused = 1
	}
	return sc
}

// digestBytes is a digest as stored: 32 bytes, or empty (never NULL) for
// none.
func digestBytes(d grant.Digest) []byte {
	if d == (grant.Digest{}) {
		return []byte{}
	}
	return append([]byte(nil), d[:]...)
}
