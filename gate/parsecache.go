package gate

import (
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/gencache"
)

// ParsedCacheEntriesDefault bounds each of Policy's caches of parsed
// grants and status statements when Policy.ParsedCacheEntriesMax is zero:
// a grant serves every segment of its operation and a status proof every
// write until it is refreshed, so a few thousand entries cover the
// writers of a busy gate (a parsed message is a few hundred bytes).
const ParsedCacheEntriesDefault = 4096

// parsedCache remembers successfully parsed messages by the SHA-256 of
// their bytes (the project's one bounded cache, internal/gencache). The
// parsers accept only canonical bytes, so equal digests mean equal bytes
// and an equal parse: a hit is exactly what parsing again would return.
// Entries are immutable and shared.
type parsedCache[T any] struct {
	c *gencache.Cache[grant.Digest, *T]
}

func newParsedCache[T any](entriesMax int) *parsedCache[T] {
	return &parsedCache[T]{gencache.New[grant.Digest, *T](entriesMax)}
}

// parse returns the parse of b, whose SHA-256 is d, from the cache or
// from parseFn (caching it only if it parsed). A nil cache always parses.
func (c *parsedCache[T]) parse(d grant.Digest, b []byte, parseFn func([]byte) (*T, error)) (*T, error) {
	if c == nil {
		return parseFn(b)
	}
	if v, ok := c.c.Get(d); ok {
		return v, nil
	}
	v, err := parseFn(b)
	if err != nil {
		return nil, err
	}
	c.c.Add(d, v)
	return v, nil
}
