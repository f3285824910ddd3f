package registry

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Status reads, linearizably, the state of grant g and returns it with a
// fresh signed status proof: this is the gate's linearizable status query.
// g must be a grant this registry issued: its digest must equal the stored
// grant's, else ErrNotFound (a forged or altered grant learns nothing).
func (r *Registry) Status(ctx context.Context, g *grant.Grant) (wire.Issued, error) {
	if g == nil {
		return wire.Issued{}, fmt.Errorf("%w: status: no grant", wire.ErrInvalid)
	}
	if err := g.Validate(); err != nil {
		return wire.Issued{}, fmt.Errorf("%w: status: %w", wire.ErrInvalid, err)
	}
	key := lockstate.RequestKey{Owner: g.Owner, RequestID: g.RequestID}
	s, err := r.read(ctx, wire.RecordName(g.Resource), []lockstate.RequestKey{key})
	if err != nil {
		return wire.Issued{}, err
	}
	out, err := r.statusAt(&s, key, r.now())
	if err != nil {
		return wire.Issued{}, err
	}
	if out.Grant.Digest() != g.Digest() {
		return wire.Issued{}, fmt.Errorf("%w: no such grant on %s", wire.ErrNotFound, g.Resource)
	}
	return out, nil
}

// QueryRequest returns the grant issued under (owner, requestID) with its
// current state and proofs: recovery after a lost acquire response.
// ErrNotFound when no grant was issued under it (a request still waiting in
// a queue has none yet) or its retention ended.
func (r *Registry) QueryRequest(ctx context.Context, owner, requestID string) (wire.Issued, error) {
	if err := grant.ValidateOwner(owner); err != nil {
		return wire.Issued{}, fmt.Errorf("%w: owner: %v", wire.ErrInvalid, err)
	}
	if err := grant.ValidateToken(requestID); err != nil {
		return wire.Issued{}, fmt.Errorf("%w: requestId: %v", wire.ErrInvalid, err)
	}
	key := lockstate.RequestKey{Owner: owner, RequestID: requestID}
	es, err := r.read(ctx, "", []lockstate.RequestKey{key})
	if err != nil {
		return wire.Issued{}, err
	}
	e := es.slot(key).Entry
	if e == nil {
		return wire.Issued{}, fmt.Errorf("%w: request %s", wire.ErrNotFound, requestID)
	}
	// Read the entry again with its resource, at one revision.
	s, err := r.read(ctx, wire.RecordName(e.Grant.Resource), []lockstate.RequestKey{key})
	if err != nil {
		return wire.Issued{}, err
	}
	return r.statusAt(&s, key, r.now())
}

// statusAt answers the state of key's grant in s at now.
func (r *Registry) statusAt(s *Snapshot, key lockstate.RequestKey, now int64) (wire.Issued, error) {
	slot := s.slot(key)
	if slot.Entry == nil || wire.RecordName(slot.Entry.Grant.Resource) != s.Resource || !lockstate.Retained(recordOf(s), slot.Entry, now, r.lim) {
		return wire.Issued{}, fmt.Errorf("%w: request %s on %s", wire.ErrNotFound, key.RequestID, s.Resource)
	}
	return r.existing(s, key, now, false)
}
