package registry

import (
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// PlantMemo records a grant memo entry, for tests that show which entries
// a renewal may trust.
func PlantMemo(r *Registry, body lockstate.GrantBody, backendRev uint64, d grant.Digest, proof string) {
	r.memo.remember(body, backendRev, d, proof)
}

// MemoBackendRev reads the memo's backend revision for body.
func MemoBackendRev(r *Registry, body lockstate.GrantBody) (uint64, bool) {
	return r.memo.backendRev(body)
}

// CachedHolder returns the grant body of resource's holder as this
// Registry last saw it.
func CachedHolder(r *Registry, resource string) (lockstate.GrantBody, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[resource]
	if !ok || c.record == nil || c.record.Holder == nil {
		return lockstate.GrantBody{}, false
	}
	return c.record.Holder.Grant, true
}
