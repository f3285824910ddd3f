package registry

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/grant"
)

var errTODO = fmt.Errorf("%w: not implemented yet", ErrUnavailable)

// Acquire grants owner the lease on req.Resource with the next fence token,
// or returns the grant already issued under (owner, req.RequestID). With
// WaitMs > 0 it queues FIFO behind earlier waiters until the lease is free,
// the wait ends (ErrWaitTimeout) or ctx ends (the ticket is withdrawn).
func (r *Registry) Acquire(ctx context.Context, owner string, req AcquireRequest) (Issued, error) {
	return Issued{}, errTODO
}

// Renew extends owner's lease to now + the grant's TTL (server-side; a
// client never names an instant) and returns a fresh HELD status proof.
// ErrLeaseExpired once the registry clock passed the lease's expiry.
func (r *Registry) Renew(ctx context.Context, owner, resource, lease string) (Issued, error) {
	return Issued{}, errTODO
}

// Release ends owner's lease at once (no lock-delay). Releasing a lease
// already released by the same owner succeeds again.
func (r *Registry) Release(ctx context.Context, owner, resource, lease string) error {
	return errTODO
}

// Status reads, linearizably, the state of the grant g (which must be one
// this registry issued: its digest is checked against the stored grant) and
// returns it with a fresh signed status proof. This is the gate's
// linearizable status query.
func (r *Registry) Status(ctx context.Context, g *grant.Grant) (Issued, error) {
	return Issued{}, errTODO
}

// QueryRequest returns the grant issued under (owner, requestID) with its
// current state: recovery after a lost acquire response. ErrNotFound when
// no grant was issued under it (or its retention ended).
func (r *Registry) QueryRequest(ctx context.Context, owner, requestID string) (Issued, error) {
	return Issued{}, errTODO
}

// RevokeEpochsBelow raises the revoked line: grants of lower issuer epochs
// report REVOKED and get no proofs, and their leases end. Raise only; a
// lower value is a no-op. Returns the line now in force.
func (r *Registry) RevokeEpochsBelow(ctx context.Context, epoch uint64) (uint64, error) {
	return 0, errTODO
}

// SetPolicyGeneration raises the resource's policy generation, stamped into
// every later grant. Raise only: a lower value is ErrInvalid.
func (r *Registry) SetPolicyGeneration(ctx context.Context, resource string, gen uint64) (ResourceInfo, error) {
	return ResourceInfo{}, errTODO
}

// RaiseFloor makes every later fence of resource exceed fence (typically the
// highest fence the resource reports). Raise only: a lower value is a no-op.
func (r *Registry) RaiseFloor(ctx context.Context, resource string, fence uint64) (ResourceInfo, error) {
	return ResourceInfo{}, errTODO
}

// Resource returns a linearizable operator's view of resource.
func (r *Registry) Resource(ctx context.Context, resource string) (ResourceInfo, error) {
	return ResourceInfo{}, errTODO
}
