package gate

import (
	"sync"

	"github.com/fencegate/fencegate/grant"
)

// ParsedCacheEntriesDefault bounds each of Policy's caches of parsed
// grants and status statements when Policy.ParsedCacheEntriesMax is zero:
// a grant serves every segment of its operation and a status proof every
// write until it is refreshed, so a few thousand entries cover the
// writers of a busy gate (a parsed message is a few hundred bytes).
const ParsedCacheEntriesDefault = 4096

// parsedCache remembers successfully parsed messages by the SHA-256 of
// their bytes. The parsers accept only canonical bytes, so equal digests
// mean equal bytes and an equal parse: a hit is exactly what parsing again
// would return. Entries are immutable and shared. It keeps two
// generations, as grant's verify cache does: when the young one fills to
// half the bound it becomes the old one and the old one is dropped; hits in
// the old generation are promoted. No map is iterated, so nothing depends
// on map order.
type parsedCache[T any] struct {
	mu         sync.Mutex
	young, old map[grant.Digest]*T
	genMax     int
}

func newParsedCache[T any](entriesMax int) *parsedCache[T] {
	return &parsedCache[T]{young: map[grant.Digest]*T{}, genMax: max(entriesMax/2, 1)}
}

// parse returns the parse of b, whose SHA-256 is d, from the cache or
// from parseFn (caching it only if it parsed). A nil cache always parses.
func (c *parsedCache[T]) parse(d grant.Digest, b []byte, parseFn func([]byte) (*T, error)) (*T, error) {
	if c == nil {
		return parseFn(b)
	}
	c.mu.Lock()
	v, ok := c.young[d]
	if !ok {
		if v, ok = c.old[d]; ok {
			c.insertLocked(d, v)
		}
	}
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := parseFn(b)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.insertLocked(d, v)
	c.mu.Unlock()
	return v, nil
}

func (c *parsedCache[T]) insertLocked(d grant.Digest, v *T) {
	if len(c.young) >= c.genMax {
		c.old, c.young = c.young, make(map[grant.Digest]*T, c.genMax)
	}
	c.young[d] = v
}
