package registry

import (
	"context"

	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// A read/write lock needs nothing of the shell but this file: a read
// acquire (wire.AcquireRequest.Mode = wire.ModeRead) is an ordinary
// Acquisition on the lock's record, decided by lockstate's rules for
// readers; a reader's lease is renewed, released and queried under its
// resource wire.ReadResource(NAME), which Renew, Release, Status and the
// retention sweep resolve to NAME's record (wire.RecordName). Every
// decision is one compare-and-swap on that record.

// Downgrade turns owner's live write lease req.Lease on req.Resource into
// a reader's lease, in one write (lockstate.DecideDowngrade): the write
// lease ends RELEASED, and owner is granted a reader's lease on
// wire.ReadResource(req.Resource) under req.RequestID with the same
// fence, TTL, operation and class. No queued writer gets in between;
// other readers wait until every HELD statement issued for the write
// lease has expired. A retry of req.RequestID answers the same reader's
// grant with its current state; the caller must stop writing under the
// write grant before it asks (its statements stay valid until they
// expire, and the gate would still accept them).
func (r *Registry) Downgrade(ctx context.Context, owner string, req wire.DowngradeRequest) (wire.Issued, error) {
	in, err := lockstate.NewDowngradeInput(owner, req)
	if err != nil {
		return wire.Issued{}, err
	}
	key := in.Key()
	var (
		dec lockstate.DowngradeDecision
		at  int64
	)
	// Not on the cache: a retry must see its request's entry.
	s, rev, err := r.casLoop(ctx, req.Resource, []lockstate.RequestKey{key}, false, func(s *Snapshot, now int64) (*Write, error) {
		var err error
		at = now
		if dec, err = lockstate.DecideDowngrade(recordOf(s), s.slot(key).Entry, s.Settings, in, now, r.lim); err != nil || dec.Existing {
			return nil, err
		}
		return r.writeFor(s, dec.Record, dec.Entries), nil
	})
	if err != nil {
		return wire.Issued{}, err
	}
	if dec.Existing {
		return r.existing(&s, key, at, false)
	}
	return r.issueFresh(dec.Body, rev, at+int64(dec.Body.TTLMs), rev, at, s.Settings)
}
