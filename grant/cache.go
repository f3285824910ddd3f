package grant

import "sync"

type cacheKey struct {
	schema string
	digest Digest
	proof  string
}

// cachedKey is the key a cached proof verified under.
type cachedKey struct {
	alg         Alg
	keyID       string
	fingerprint [32]byte
}

// verifyCache remembers successful verifications in two generations: when
// the young one fills to half the bound it becomes the old one, and the old
// one is dropped. Hits in the old generation are promoted. This bounds
// memory at entriesMax with LRU-like behaviour and O(1) operations.
type verifyCache struct {
	mu         sync.Mutex
	young, old map[cacheKey]cachedKey
	genMax     int // 0 disables the cache
}

func newVerifyCache(entriesMax int) *verifyCache {
	c := &verifyCache{genMax: max(entriesMax/2, 0)}
	if entriesMax > 0 && c.genMax == 0 {
		c.genMax = 1
	}
	c.young = make(map[cacheKey]cachedKey)
	return c
}

func (c *verifyCache) get(k cacheKey) (cachedKey, bool) {
	if c.genMax == 0 {
		return cachedKey{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.young[k]; ok {
		return v, true
	}
	if v, ok := c.old[k]; ok {
		c.insertLocked(k, v)
		return v, true
	}
	return cachedKey{}, false
}

func (c *verifyCache) add(k cacheKey, v cachedKey) {
	if c.genMax == 0 {
		return
	}
	c.mu.Lock()
	c.insertLocked(k, v)
	c.mu.Unlock()
}

func (c *verifyCache) insertLocked(k cacheKey, v cachedKey) {
	if len(c.young) >= c.genMax {
		c.old, c.young = c.young, make(map[cacheKey]cachedKey, c.genMax)
	}
	c.young[k] = v
}

// len returns the number of entries held (for tests of the bound).
func (c *verifyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.young) + len(c.old)
}
