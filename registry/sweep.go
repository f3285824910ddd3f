package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
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
// entry's revision, so an entry that changed meanwhile is left alone.
//
// An entry is written once, at grant, so it does not say when its lease
// ended: the sweep reads that from the resource's record (endedAtMs), one
// read per resource and page, and only for entries granted more than the
// retention ago (none younger can be due). A holder past its expiry with
// no write to say so makes the sweep settle its resource (write down the
// expiry the clock already decided) before judging the entry.
func (r *Registry) SweepRequests(ctx context.Context, after lockstate.RequestKey) (lockstate.RequestKey, int, error) {
	page, err := r.store.ScanRequests(ctx, after, SweepScanMax)
	if err != nil {
		return after, 0, storeError("scan", err)
	}
	if len(page) == 0 {
		return lockstate.RequestKey{}, 0, nil
	}
	set, err := r.read(ctx, "", nil)
	if err != nil {
		return after, 0, err
	}
	deleted := 0
	now := r.now()
	records := map[string]Snapshot{}
	for _, sl := range page {
		due, err := r.sweepDue(ctx, sl, records, now)
		if err != nil {
			return after, deleted, err
		}
		if !due {
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
		next = lockstate.RequestKey{}
	}
	return next, deleted, nil
}

// sweepDue reports whether sl's entry is past its retention at now.
// records holds the resources this page has read.
func (r *Registry) sweepDue(ctx context.Context, sl RequestSlot, records map[string]Snapshot, now int64) (bool, error) {
	e := sl.Entry
	retention := int64(r.cfg.RequestRetentionMs)
	switch {
	case e == nil:
		return false, nil
	case e.State != grant.StateHeld: // written again at its end by an older registry
		return now >= e.EndedAtMs+retention, nil
	case now < e.Grant.IssuedAtMs+retention: // it ended after it was granted
		return false, nil
	}
	resource := e.Grant.Resource
	s, ok := records[resource]
	if !ok {
		var err error
		if s, err = r.read(ctx, resource, nil); err != nil {
			return false, err
		}
		records[resource] = s
	}
	rec := recordOf(&s)
	if next, _ := lockstate.Normalize(rec, s.Settings, now, r.lim); lockstate.HoldsEntry(rec, e) && !lockstate.HoldsEntry(next, e) {
		// Ended by the clock with no write yet: write it down, so the
		// record says when, and judge the record it left.
		if err := r.settle(ctx, resource); err != nil {
			return false, err
		}
		var err error
		if s, err = r.read(ctx, resource, nil); err != nil {
			return false, err
		}
		records[resource], rec = s, recordOf(&s)
	}
	return !lockstate.Retained(rec, e, now, r.lim), nil
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
	after := lockstate.RequestKey{}
	for {
		next, n, err := r.SweepRequests(ctx, after)
		total += n
		if err != nil || next == (lockstate.RequestKey{}) {
			return total, err
		}
		after = next
	}
}

// settle writes down what the clock already decided on resource: a holder
// that expired or was revoked ends, dead waiters leave. Nothing else moves.
func (r *Registry) settle(ctx context.Context, resource string) error {
	_, _, err := r.casLoop(ctx, resource, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		rec, changed := lockstate.Normalize(recordOf(s), s.Settings, now, r.lim)
		if !changed {
			return nil, nil
		}
		return writeFor(s, rec, nil), nil
	})
	return err
}
