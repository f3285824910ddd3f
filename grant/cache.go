package grant

import "sync"

type cacheKey struct {
	digest Digest
	proof  string
	key    [32]byte // key-material fingerprint
}

// verifyCache remembers successful verifications in two generations: when
// the young one fills to half the bound it becomes the old one, and the old
// one is dropped. Hits in the old generation are promoted. This bounds
// memory at entriesMax with LRU-like behaviour and O(1) operations.
type verifyCache struct {
	mu         sync.Mutex
	young, old map[cacheKey]struct{}
	genMax     int // 0 disables the cache
}

func newVerifyCache(entriesMax int) *verifyCache {
	c := &verifyCache{genMax: max(entriesMax/2, 0)}
	if entriesMax > 0 && c.genMax == 0 {
		c.genMax = 1
	}
	c.young = make(map[cacheKey]struct{})
	return c
}

func (c *verifyCache) has(k cacheKey) bool {
	if c.genMax == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.young[k]; ok {
		return true
	}
	if _, ok := c.old[k]; ok {
		c.insertLocked(k)
		return true
	}
	return false
}

func (c *verifyCache) add(k cacheKey) {
	if c.genMax == 0 {
		return
	}
	c.mu.Lock()
	c.insertLocked(k)
	c.mu.Unlock()
}

func (c *verifyCache) insertLocked(k cacheKey) {
	if len(c.young) >= c.genMax {
		c.old, c.young = c.young, make(map[cacheKey]struct{}, c.genMax)
	}
	c.young[k] = struct{}{}
}

// len returns the number of entries held (for tests of the bound).
func (c *verifyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.young) + len(c.old)
}
