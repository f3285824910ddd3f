package redisgate

import (
	"container/list"
	"sync"

	"github.com/fencegate/fencegate/gate"
)

// The cache holds the last state this Gate saw per resource — the bytes
// of the state key and their decoding — so that a warm Apply decides
// without reading and commits with one compare-and-set. It is never
// trusted for an answer: the script compares the bytes the decision was
// made on with the stored ones, and a decision on the cache that writes
// nothing is taken again on a fresh read.

// snapshot is a state to decide on.
type snapshot struct {
	blob string     // the state key's bytes ("": no state yet)
	st   gate.State // blob decoded
	// fresh: read from Redis in this Apply (a WATCH read or a lost
	// compare-and-set's reply), so prior is the stored receipt at the
	// mutation's (fence, segment); a cached snapshot has no prior.
	fresh bool
	prior *gate.Receipt
}

// decidable reports whether a decision for m may be made on s: a fresh
// snapshot always; a cached one only if m's fence and segment are above
// the state's, where no receipt can exist yet (receipts are written with
// the state that reaches them), so the missing prior is the truth.
func (s snapshot) decidable(m *gate.Mutation) bool {
	if s.fresh {
		return true
	}
	return m.FenceToken > s.st.HighestFence || m.FenceToken == s.st.HighestFence && m.SegmentSeq > s.st.LastSegmentSeq
}

// stateCache is a bounded LRU of snapshots by resource; nil is a cache
// that holds nothing (Config.CachedStatesMax < 0).
type stateCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recently used; values are *cacheEntry
	by    map[string]*list.Element
}

type cacheEntry struct {
	resource string
	blob     string
	st       gate.State
}

func newStateCache(max int) *stateCache {
	if max < 0 {
		return nil
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
	e := el.Value.(*cacheEntry)
	return snapshot{blob: e.blob, st: e.st}, true
}

// put remembers blob (decoded as st) as the state of resource, evicting
// the least recently used resource past the bound. Of two writers of one
// Gate the later put wins, newer or not: a cache behind the store costs
// one failed compare, never a wrong answer.
func (c *stateCache) put(resource, blob string, st gate.State) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.by[resource]; ok {
		e := el.Value.(*cacheEntry)
		e.blob, e.st = blob, st
		c.order.MoveToFront(el)
		return
	}
	c.by[resource] = c.order.PushFront(&cacheEntry{resource: resource, blob: blob, st: st})
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.by, old.Value.(*cacheEntry).resource)
	}
}

// forget drops resource (an error left its stored state unknown).
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

// len is the number of cached resources.
func (c *stateCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
