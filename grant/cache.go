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

// rootKey names a verified batch root: the key that signed it, the tree's
// size and root, and the signature itself (a cache hit needs the very
// signature that verified).
type rootKey struct {
	keyID string
	size  int
	root  Digest
	sig   [64]byte
}

// rootCache remembers verified batch roots with the fingerprint of the
// key material they verified under.
type rootCache = gencache.Cache[rootKey, [32]byte]

func newRootCache(entriesMax int) *rootCache {
	return gencache.New[rootKey, [32]byte](entriesMax)
}
