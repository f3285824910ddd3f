package registry

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// RevokeEpochsBelow raises the revoked line: grants of lower issuer epochs
// report REVOKED, get no proofs, and their leases end (without lock-delay:
// the fence, not the lease, keeps their writes out). Raise only; a lower
// value changes nothing. Returns the line now in force. Gates learn of the
// revocation from their trust bundle, which the operator updates too.
func (r *Registry) RevokeEpochsBelow(ctx context.Context, epoch uint64) (uint64, error) {
	var line uint64
	_, _, err := r.casLoop(ctx, "", nil, false, func(s *Snapshot, now int64) (*Write, error) {
		line = s.Settings.RevokedBelowEpoch
		set := lockstate.DecideRevoke(s.Settings, epoch)
		if set == nil {
			return nil, nil
		}
		line = set.RevokedBelowEpoch
		return &Write{SettingsRev: s.SettingsRev, Settings: set}, nil
	})
	return line, err
}

// SetPolicyGeneration raises the resource's policy generation, stamped into
// every later grant. Raise only: a lower value is ErrInvalid.
func (r *Registry) SetPolicyGeneration(ctx context.Context, resource string, gen uint64) (wire.ResourceInfo, error) {
	return r.adminRecord(ctx, resource, func(rec *lockstate.Record, _ lockstate.Settings) (*lockstate.Record, error) {
		return lockstate.DecidePolicyGeneration(rec, gen)
	})
}

// RaiseFloor makes every later fence of resource exceed fence, typically
// the highest fence the resource itself reports, so a registry restored
// from an old snapshot never reissues a fence a gate has seen. Raise only:
// a lower value changes nothing. A floor at or past the end of the
// current fence range is ErrFenceRange: bump the range instead
// (BumpFenceRange), which moves every resource at once.
func (r *Registry) RaiseFloor(ctx context.Context, resource string, fence uint64) (wire.ResourceInfo, error) {
	return r.adminRecord(ctx, resource, func(rec *lockstate.Record, set lockstate.Settings) (*lockstate.Record, error) {
		return lockstate.DecideRaiseFloor(resource, rec, set, fence)
	})
}

// Resource returns a linearizable operator's view of resource.
func (r *Registry) Resource(ctx context.Context, resource string) (wire.ResourceInfo, error) {
	return r.adminRecord(ctx, resource, func(*lockstate.Record, lockstate.Settings) (*lockstate.Record, error) { return nil, nil })
}

func (r *Registry) adminRecord(ctx context.Context, resource string, decide func(*lockstate.Record, lockstate.Settings) (*lockstate.Record, error)) (wire.ResourceInfo, error) {
	if err := grant.ValidateResource(resource); err != nil {
		return wire.ResourceInfo{}, fmt.Errorf("%w: resource: %v", wire.ErrInvalid, err)
	}
	var info wire.ResourceInfo
	_, rev, err := r.casLoop(ctx, resource, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		rec, err := decide(recordOf(s), s.Settings)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			info = lockstate.ResourceInfo(resource, recordOf(s), s.Settings, now, s.Revision, r.lim)
			return nil, nil
		}
		info = lockstate.ResourceInfo(resource, rec, s.Settings, now, 0, r.lim)
		return &Write{Resource: resource, RecordRev: s.RecordRev, Record: rec, SettingsRev: s.SettingsRev}, nil
	})
	if rev != 0 {
		info.Revision = rev
	}
	return info, err
}
