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
//
// It also remembers, per resource, the furthest state the Gate saw
// stored, which only moves forward: a fresh read behind it means the
// store lost writes it had acknowledged (wentback.go).

// snapshot is a state to decide on.
type snapshot struct {
	blob string          // the state key's bytes ("": no state yet)
	st   gate.FenceState // blob decoded
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

// stateCache is a bounded LRU by resource of two things: the state to
// decide on (snapshot; dropped by forget, never held when the Gate keeps
// no states) and the furthest state this Gate saw stored (seen; kept by
// forget, so that an error does not make the Gate forget a fence). nil
// holds nothing: a test's mutant.
type stateCache struct {
	mu     sync.Mutex
	max    int
	states bool       // false: remember seen states only (Config.CachedStatesMax < 0)
	order  *list.List // front: most recently used; values are *cacheEntry
	by     map[string]*list.Element
}

type cacheEntry struct {
	resource string
	held     bool // blob and st are a state to decide on
	blob     string
	st       gate.FenceState
	seenAny  bool            // a stored state was seen
	seen     gate.FenceState // the furthest of them (behind says what is further)
}

// newStateCache holds up to max states; max < 0 holds none but still
// remembers what it saw of CachedStatesMaxDefault resources.
func newStateCache(max int) *stateCache {
	c := &stateCache{max: max, states: max >= 0, order: list.New(), by: map[string]*list.Element{}}
	if !c.states {
		c.max = CachedStatesMaxDefault
	}
	return c
}

// get returns the cached state of resource.
func (c *stateCache) get(resource string) (snapshot, bool) {
	if c == nil {
		return snapshot{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.by[resource]
	if !ok || !el.Value.(*cacheEntry).held {
		return snapshot{}, false
	}
	c.order.MoveToFront(el)
	e := el.Value.(*cacheEntry)
	return snapshot{blob: e.blob, st: e.st}, true
}

// put remembers blob (decoded as st), stored now, as the state of
// resource, evicting the least recently used resource past the bound. Of
// two writers of one Gate the later put wins the state to decide on,
// newer or not: a cache behind the store costs one failed compare, never
// a wrong answer. But the seen state only moves forward, and a put of a
// state behind it (a late put, or a store that went back) leaves it and
// drops the state to decide on: were the store to go back to exactly
// those bytes, a compare-and-set on them would succeed unchecked.
func (c *stateCache) put(resource, blob string, st gate.FenceState) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.by[resource]
	if ok {
		c.order.MoveToFront(el)
	} else {
		el = c.order.PushFront(&cacheEntry{resource: resource})
		c.by[resource] = el
	}
	e := el.Value.(*cacheEntry)
	switch {
	case blob != "" && (!e.seenAny || behind(st, e.seen) == ""):
		e.seenAny, e.seen = true, st
		e.held, e.blob, e.st = c.states, blob, st
	case e.seenAny: // behind what was seen: a late put, or a store that went back
		e.held, e.blob, e.st = false, "", gate.FenceState{} // decide on a fresh read, which is checked
	default: // no state stored, none seen
		e.held, e.blob, e.st = c.states, blob, st
	}
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.by, old.Value.(*cacheEntry).resource)
	}
}

// forget drops the state to decide on of resource (an error left its
// stored state unknown); what was seen stays.
func (c *stateCache) forget(resource string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.by[resource]; ok {
		e := el.Value.(*cacheEntry)
		e.held, e.blob, e.st = false, "", gate.FenceState{}
	}
}

// seen returns the furthest state this Gate saw stored for resource.
func (c *stateCache) seen(resource string) (gate.FenceState, bool) {
	if c == nil {
		return gate.FenceState{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.by[resource]
	if !ok {
		return gate.FenceState{}, false
	}
	e := el.Value.(*cacheEntry)
	return e.seen, e.seenAny
}

// len is the number of resources the cache holds an entry for.
func (c *stateCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
