package registry

import (
	"context"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
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

// BreakMemberOnly is Break as it was before a lock set's member's break
// ended the whole set: the named record alone (the negative control of
// the set-break tests; never product code).
func BreakMemberOnly(r *Registry, ctx context.Context, resource string) (wire.BreakResponse, error) {
	var out wire.BreakResponse
	_, _, err := r.casLoop(ctx, resource, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		dec, ended := lockstate.DecideBreak(recordOf(s), s.Settings, now, r.lim, takenKeys(s))
		out.Ended = nil
		for i := range ended {
			out.Ended = append(out.Ended, wire.BrokenLease{Resource: ended[i].Grant.Resource, Holder: *lockstate.HolderView(&ended[i])})
		}
		return r.writeFor(s, dec.Record, dec.Entries), nil
	})
	if len(out.Ended) > 0 {
		out.Broken = &out.Ended[0].Holder
	}
	return out, err
}
