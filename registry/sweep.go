package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// SweepScanMax is how many request entries one SweepRequests call reads;
// a sweep of a large index proceeds in pages of this size.
const SweepScanMax = 512

// SweepRequests deletes up to one page of request entries whose lease
// ended more than Config.RequestRetentionMs ago (by the registry clock),
// starting after the key after. It returns the key to continue from (zero
// when the index has been walked to its end) and how many it deleted.
// Entries of live grants are never deleted; each delete compares the
// entry's revision, so an entry that changed meanwhile is left alone. A
// HELD entry past its first expiry makes the sweep settle its resource
// (write down an expiry the clock already decided), so it can be forgotten
// on a later pass.
func (r *Registry) SweepRequests(ctx context.Context, after RequestKey) (RequestKey, int, error) {
	page, err := r.store.ScanRequests(ctx, after, SweepScanMax)
	if err != nil {
		return after, 0, storeError("scan", err)
	}
	if len(page) == 0 {
		return RequestKey{}, 0, nil
	}
	set, err := r.read(ctx, "", nil)
	if err != nil {
		return after, 0, err
	}
	deleted := 0
	now := r.now()
	for _, sl := range page {
		if sl.Entry == nil {
			continue
		}
		if sl.Entry.State == grant.StateHeld && sl.Entry.Grant.IssuedAtMs+int64(sl.Entry.Grant.TTLMs) <= now {
			// Possibly expired without anyone writing it down: let the
			// core end it, so a later sweep can forget it.
			if err := r.settle(ctx, sl.Entry.Grant.Resource); err != nil {
				return after, deleted, err
			}
			continue
		}
		if retained(sl.Entry, now, r.cfg) {
			continue
		}
		res, err := r.store.Commit(ctx, Write{
			SettingsRev: set.SettingsRev,
			Requests:    []RequestWrite{{Key: sl.Key, Compare: true, ModRev: sl.ModRev}},
		})
		if err != nil {
			return after, deleted, storeError("sweep", err)
		}
		if res.OK {
			deleted++
		}
	}
	next := page[len(page)-1].Key
	if len(page) < SweepScanMax {
		next = RequestKey{}
	}
	return next, deleted, nil
}

// SweepLoop sweeps the whole request index every interval until ctx ends,
// which is its only way to return (with ctx's error). Errors of one sweep
// are passed to report (which may be nil) and the next sweep starts over.
func (r *Registry) SweepLoop(ctx context.Context, interval time.Duration, report func(deleted int, err error)) error {
	if interval <= 0 {
		return fmt.Errorf("%w: sweep interval %s", wire.ErrInvalid, interval)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.clock.After(interval):
		}
		total, err := r.sweepAll(ctx)
		if report != nil {
			report(total, err)
		}
	}
}

func (r *Registry) sweepAll(ctx context.Context) (int, error) {
	total := 0
	after := RequestKey{}
	for {
		next, n, err := r.SweepRequests(ctx, after)
		total += n
		if err != nil || next == (RequestKey{}) {
			return total, err
		}
		after = next
	}
}

// settle writes down what the clock already decided on resource: a holder
// that expired or was revoked ends, dead waiters leave. Nothing else moves.
func (r *Registry) settle(ctx context.Context, resource string) error {
	_, _, err := r.casLoop(ctx, resource, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		rec, puts, changed := normalize(recordOf(s), s.Settings, now, r.cfg)
		if !changed {
			return nil, nil
		}
		return writeFor(s, rec, puts), nil
	})
	return err
}
