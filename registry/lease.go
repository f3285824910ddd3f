package registry

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Renew extends owner's lease to now + the grant's TTL (server-side: a
// client never names an instant) and returns the grant with a fresh HELD
// status proof. ErrLeaseExpired once the registry clock reached the lease's
// expiry; ErrNotHolder when the lease is not owner's or was released. A
// reader's lease (resource wire.ReadResource(NAME)) is renewed on NAME's
// record, alone: no other reader's expiry moves.
func (r *Registry) Renew(ctx context.Context, owner, resource, lease string) (wire.Issued, error) {
	if err := validateLease(owner, resource, lease); err != nil {
		return wire.Issued{}, err
	}
	var (
		dec lockstate.LeaseDecision
		at  int64
	)
	s, rev, err := r.casLoop(ctx, wire.RecordName(resource), nil, true, func(s *Snapshot, now int64) (*Write, error) {
		var err error
		at = now
		if dec, err = lockstate.DecideRenew(recordOf(s), s.Settings, owner, lease, now, r.lim); err != nil {
			return nil, err
		}
		return r.writeFor(s, dec.Record, dec.Entries), nil
	})
	if err != nil {
		return wire.Issued{}, err
	}
	backendRev, err := r.backendRevision(ctx, owner, dec.Holder.Grant)
	if err != nil {
		return wire.Issued{}, err
	}
	return r.issue(dec.Holder.Grant, backendRev, grant.StateHeld, dec.Holder.ExpiresAtMs, max(rev, s.Revision), at, s.Settings)
}

// backendRevision is the create revision of the held grant's request
// entry: remembered when this Registry issued or answered for the grant,
// read otherwise.
func (r *Registry) backendRevision(ctx context.Context, owner string, body lockstate.GrantBody) (uint64, error) {
	if rev, ok := r.memo.backendRev(body); ok {
		return rev, nil
	}
	key := lockstate.RequestKey{Owner: owner, RequestID: body.RequestID}
	es, err := r.read(ctx, "", []lockstate.RequestKey{key})
	if err != nil {
		return 0, err
	}
	slot := es.slot(key)
	if slot.Entry == nil || slot.Entry.Grant.Lease != body.Lease {
		return 0, fmt.Errorf("%w: lease %s has no request entry", wire.ErrCorrupt, body.Lease)
	}
	return slot.CreateRev, nil
}

// Release ends owner's lease at once; the resource is free immediately
// (lock-delay follows only expiry), and in the same write goes to the head
// waiter, if any. Releasing a lease the same owner already
// released succeeds again, so a release whose response was lost can be
// retried. ErrLeaseExpired when it had already expired.
//
// It answers after its one commit, or with Config.ReleaseEarly once that
// commit is decided and handed to the store (releaseEarly): then a
// commit lost after the answer leaves the lease to end at its TTL.
func (r *Registry) Release(ctx context.Context, owner, resource, lease string) error {
	if err := validateLease(owner, resource, lease); err != nil {
		return err
	}
	resource = wire.RecordName(resource) // a reader's lease is on its lock's record
	if r.cfg.ReleaseEarly {
		return r.releaseEarly(ctx, owner, resource, lease)
	}
	return r.releaseDurable(ctx, owner, resource, lease)
}

// releaseDurable is a release answered after its commit: one
// compare-and-swap on the cached record (a read first on a miss).
func (r *Registry) releaseDurable(ctx context.Context, owner, resource, lease string) error {
	_, _, err := r.casLoop(ctx, resource, nil, true, r.decideRelease(owner, lease))
	return err
}

// decideRelease is the release's decision on a snapshot and its write.
func (r *Registry) decideRelease(owner, lease string) decideFunc {
	return func(s *Snapshot, now int64) (*Write, error) {
		dec, err := lockstate.DecideRelease(recordOf(s), s.Settings, owner, lease, now, r.lim, takenKeys(s))
		if err != nil {
			return nil, err
		}
		return r.writeFor(s, dec.Record, dec.Entries), nil
	}
}

func validateLease(owner, resource, lease string) error {
	if err := grant.ValidateOwner(owner); err != nil {
		return fmt.Errorf("%w: owner: %v", wire.ErrInvalid, err)
	}
	if err := grant.ValidateResource(resource); err != nil {
		return fmt.Errorf("%w: resource: %v", wire.ErrInvalid, err)
	}
	if err := grant.ValidateToken(lease); err != nil {
		return fmt.Errorf("%w: lease: %v", wire.ErrInvalid, err)
	}
	return nil
}
