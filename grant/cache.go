package grant

import "github.com/fencegate/fencegate/internal/gencache"

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

// verifyCache remembers successful verifications (the project's one
// bounded cache, internal/gencache).
type verifyCache = gencache.Cache[cacheKey, cachedKey]

func newVerifyCache(entriesMax int) *verifyCache {
	return gencache.New[cacheKey, cachedKey](entriesMax)
}
