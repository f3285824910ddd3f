// Package gencache is the project's one bounded cache of immutable
// values: two generations of at most half the bound each; when the young
// one fills it becomes the old one and the old one is dropped, and a hit
// in the old generation is promoted. Memory is bounded by the entry count,
// every operation is O(1), and no map is ever iterated, so nothing depends
// on map order. The grant verifier's cache of verified proofs and the
// gate's caches of parsed grants and status statements use it.
package gencache

import "sync"

// Cache holds up to entriesMax values. The zero value and a nil *Cache
// cache nothing. Safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu         sync.Mutex
	young, old map[K]V
	genMax     int // 0: caches nothing
}

// New returns a cache of at most entriesMax entries (at least one
// generation entry when entriesMax > 0; none when it is 0 or negative).
func New[K comparable, V any](entriesMax int) *Cache[K, V] {
	c := &Cache[K, V]{}
	if entriesMax > 0 {
		c.genMax = max(entriesMax/2, 1)
		c.young = make(map[K]V)
	}
	return c
}

// Get returns k's value, promoting it from the old generation.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	var zero V
	if c == nil || c.genMax == 0 {
		return zero, false
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
	return zero, false
}

// Add remembers v under k.
func (c *Cache[K, V]) Add(k K, v V) {
	if c == nil || c.genMax == 0 {
		return
	}
	c.mu.Lock()
	c.insertLocked(k, v)
	c.mu.Unlock()
}

func (c *Cache[K, V]) insertLocked(k K, v V) {
	if len(c.young) >= c.genMax {
		c.old, c.young = c.young, make(map[K]V, c.genMax)
	}
	c.young[k] = v
}

// Len returns the number of entries held.
func (c *Cache[K, V]) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.young) + len(c.old)
}
