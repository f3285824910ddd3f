package registry

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Direct is the registry in process as one owner's client transport
// (client.Transport, by its method set): tests and single-process
// deployments use it. Every answer is the registry's own, errors
// included.
type Direct struct {
	Registry *Registry
	Owner    string
}

// Acquire calls Registry.Acquire as d.Owner.
func (d Direct) Acquire(ctx context.Context, req wire.AcquireRequest) (wire.Issued, error) {
	return d.Registry.Acquire(ctx, d.Owner, req)
}

// Renew calls Registry.Renew as d.Owner.
func (d Direct) Renew(ctx context.Context, resource, lease string) (wire.Issued, error) {
	return d.Registry.Renew(ctx, d.Owner, resource, lease)
}

// Release calls Registry.Release as d.Owner.
func (d Direct) Release(ctx context.Context, resource, lease string) error {
	return d.Registry.Release(ctx, d.Owner, resource, lease)
}

// Status calls Registry.Status.
func (d Direct) Status(ctx context.Context, g *grant.Grant) (wire.Issued, error) {
	return d.Registry.Status(ctx, g)
}

// QueryRequest calls Registry.QueryRequest as d.Owner.
func (d Direct) QueryRequest(ctx context.Context, requestID string) (wire.Issued, error) {
	return d.Registry.QueryRequest(ctx, d.Owner, requestID)
}

// LockStatus calls Registry.LockStatus.
func (d Direct) LockStatus(ctx context.Context, resource string) (wire.LockStatus, error) {
	return d.Registry.LockStatus(ctx, resource)
}

// WatchLock calls Registry.WatchLock.
func (d Direct) WatchLock(ctx context.Context, resource string, afterRevision uint64, wait time.Duration) (wire.LockStatus, error) {
	return d.Registry.WatchLock(ctx, resource, afterRevision, wait)
}

// AcquireSet calls Registry.AcquireSet as d.Owner (client.SetTransport).
func (d Direct) AcquireSet(ctx context.Context, req wire.LockSetRequest) (wire.IssuedSet, error) {
	return d.Registry.AcquireSet(ctx, d.Owner, req)
}

// RenewSet calls Registry.RenewSet as d.Owner.
func (d Direct) RenewSet(ctx context.Context, leases []wire.LeaseRequest) (wire.IssuedSet, error) {
	return d.Registry.RenewSet(ctx, d.Owner, leases)
}

// ReleaseSet calls Registry.ReleaseSet as d.Owner.
func (d Direct) ReleaseSet(ctx context.Context, leases []wire.LeaseRequest) error {
	return d.Registry.ReleaseSet(ctx, d.Owner, leases)
}

// Downgrade calls Registry.Downgrade as d.Owner.
func (d Direct) Downgrade(ctx context.Context, req wire.DowngradeRequest) (wire.Issued, error) {
	return d.Registry.Downgrade(ctx, d.Owner, req)
}
