package lockstate

import (
	"fmt"

	"github.com/fencegate/fencegate/wire"
)

// DecideRaiseFloor raises rec's fence floor to fence. Raise only: a lower
// or equal value changes nothing (nil record). A floor no fence of the
// current range can exceed is refused: that is what a bump is for.
func DecideRaiseFloor(resource string, rec *Record, set Settings, fence uint64) (*Record, error) {
	if fence <= rec.Floor {
		return nil, nil
	}
	if err := checkFloorInRange(resource, fence, set); err != nil {
		return nil, err
	}
	next := rec.Clone()
	next.Floor = fence
	return next, nil
}

// DecidePolicyGeneration raises rec's policy generation. Lowering it would
// let grants pass a gate's minimum that an operator meant to retire.
func DecidePolicyGeneration(rec *Record, gen uint64) (*Record, error) {
	switch {
	case gen < rec.PolicyGeneration:
		return nil, fmt.Errorf("%w: policy generation %d below current %d (raise only)", wire.ErrInvalid, gen, rec.PolicyGeneration)
	case gen == rec.PolicyGeneration:
		return nil, nil
	}
	next := rec.Clone()
	next.PolicyGeneration = gen
	return next, nil
}

// DecideRevoke raises the revoked-epoch line. Raise only.
func DecideRevoke(set Settings, epoch uint64) *Settings {
	if epoch <= set.RevokedBelowEpoch {
		return nil
	}
	next := set
	next.RevokedBelowEpoch = epoch
	return &next
}

// ResourceInfo summarizes rec as judged at now.
func ResourceInfo(resource string, rec *Record, set Settings, now int64, rev uint64, lim Limits) wire.ResourceInfo {
	next, _ := Normalize(rec, set, now, lim)
	info := wire.ResourceInfo{
		Resource: resource, HighestFence: next.HighestFence, Floor: next.Floor,
		PolicyGeneration: next.PolicyGeneration, Waiters: len(next.Waiters), Revision: rev,
		FenceGeneration: set.FenceGeneration,
	}
	if f, err := nextFence(resource, next, set); err == nil {
		info.NextFence = f
	}
	if h := next.Holder; h != nil {
		info.HolderLease, info.HolderOwner = h.Grant.Lease, h.Grant.Owner
	}
	return info
}
