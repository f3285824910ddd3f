package registry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Limits of the lock views.
const (
	// ListLimitDefault and ListLimitMax bound one page of ListLocks.
	ListLimitDefault = 100
	ListLimitMax     = 1000
	// WatchWaitMsMax bounds one WatchLock long poll, 60 s.
	WatchWaitMsMax = 60_000
)

// LockStatus reads, linearizably, what anyone allowed to see resource may
// know of its lock: holder, since when, how long it has left, the fences,
// lock-delay and the queue. Expiry is judged at the read, by the
// registry's clock. A resource never acquired reads as free, at fence 0.
func (r *Registry) LockStatus(ctx context.Context, resource string) (wire.LockStatus, error) {
	if err := grant.ValidateResource(resource); err != nil {
		return wire.LockStatus{}, fmt.Errorf("%w: resource: %v", wire.ErrInvalid, err)
	}
	s, err := r.read(ctx, resource, nil)
	if err != nil {
		return wire.LockStatus{}, err
	}
	v := r.viewOf(&s)
	if v.Permits > 0 {
		if v.Slots, err = r.slotViews(ctx, resource, v.Permits); err != nil {
			return wire.LockStatus{}, err
		}
	}
	return v, nil
}

// slotViews reads the lock views of a semaphore's slots, one
// linearizable read each, in slot order.
func (r *Registry) slotViews(ctx context.Context, name string, permits uint64) ([]wire.LockStatus, error) {
	out := make([]wire.LockStatus, 0, permits)
	for i := range int(permits) {
		s, err := r.read(ctx, wire.SlotResource(name, i), nil)
		if err != nil {
			return nil, err
		}
		out = append(out, r.viewOf(&s))
	}
	return out, nil
}

// viewOf is the lock view of snapshot s at the registry's now.
func (r *Registry) viewOf(s *Snapshot) wire.LockStatus {
	now := r.now()
	next, _ := lockstate.Normalize(recordOf(s), s.Settings, now, r.lim)
	return lockstate.LockView(s.Resource, next, now, s.RecordRev)
}

// ListLocks lists, linearizably, the locks of the resources whose names
// begin with prefix and sort after after, in name order, at most limit
// (0: ListLimitDefault; at most ListLimitMax). Only resources with a
// record (acquired at least once, or given a floor) are listed. Next in
// the answer is the after of the next page, "" on the last. see, if not
// nil, filters the resources the caller may see; a page may then hold
// fewer than limit.
func (r *Registry) ListLocks(ctx context.Context, prefix, after string, limit int, see func(string) bool) (wire.LockList, error) {
	if limit <= 0 {
		limit = ListLimitDefault
	}
	limit = min(limit, ListLimitMax)
	if after != "" && !strings.HasPrefix(after, prefix) {
		return wire.LockList{}, fmt.Errorf("%w: after %q is not under prefix %q", wire.ErrInvalid, after, prefix)
	}
	set, err := r.read(ctx, "", nil) // revoked epochs end their holders in the view too
	if err != nil {
		return wire.LockList{}, err
	}
	slots, err := r.store.ScanRecords(ctx, prefix, after, limit)
	if err != nil {
		return wire.LockList{}, storeError("scan", err)
	}
	now := r.now()
	out := wire.LockList{Locks: make([]wire.LockStatus, 0, len(slots))}
	for _, sl := range slots {
		if see != nil && !see(sl.Resource) {
			continue
		}
		next, _ := lockstate.Normalize(recordOrEmpty(sl.Record), set.Settings, now, r.lim)
		out.Locks = append(out.Locks, lockstate.LockView(sl.Resource, next, now, sl.ModRev))
	}
	if len(slots) == limit {
		out.Next = slots[len(slots)-1].Resource
	}
	return out, nil
}

func recordOrEmpty(rec *lockstate.Record) *lockstate.Record {
	if rec == nil {
		return &lockstate.Record{}
	}
	return rec
}

// WatchLock waits until resource's lock differs from what a reader saw at
// record revision afterRev — the record changed, or a holder's lease or
// lock-delay ran out, which changes the lock without a write — or until
// wait (at most WatchWaitMsMax) passes, or ctx ends; then it returns the
// lock as LockStatus would. A caller that streams changes (fencegate elect
// --observe) calls it again with the revision it got. It never polls
// faster than the registry's WaitPollMsMax.
func (r *Registry) WatchLock(ctx context.Context, resource string, afterRev uint64, wait time.Duration) (wire.LockStatus, error) {
	v, err := r.LockStatus(ctx, resource)
	if err != nil || v.Revision != afterRev || wait <= 0 {
		return v, err
	}
	wait = min(wait, WatchWaitMsMax*time.Millisecond)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := r.store.Watch(wctx, resource, afterRev+1)
	if err != nil {
		events = nil // poll instead
	}
	deadline := r.clock.Now().Add(wait)
	for {
		due := deadline
		if at, ok := lockChangesAt(v); ok && at.Before(due) {
			due = at
		}
		due = minTime(due, r.clock.Now().Add(time.Duration(r.cfg.WaitPollMsMax)*time.Millisecond))
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case _, ok := <-events:
			if !ok {
				events = nil
			}
		case <-r.clock.After(due.Sub(r.clock.Now())):
		}
		next, err := r.LockStatus(ctx, resource)
		if err != nil {
			return v, err
		}
		if lockChanged(v, next) || !r.clock.Now().Before(deadline) {
			return next, nil
		}
		v = next
	}
}

// lockChangesAt is when v changes with no write: its holder's expiry, or
// the end of lock-delay; with readers, the first reader's expiry or the
// end of a downgrade's wait, if earlier.
func lockChangesAt(v wire.LockStatus) (time.Time, bool) {
	var at time.Time
	switch {
	case v.Holder != nil:
		at = v.Holder.ExpiresAt
	case v.FreeAt != nil:
		at = *v.FreeAt
	}
	for _, h := range v.Readers {
		if at.IsZero() || h.ExpiresAt.Before(at) {
			at = h.ExpiresAt
		}
	}
	if v.ReadersFrom != nil && (at.IsZero() || v.ReadersFrom.Before(at)) {
		at = *v.ReadersFrom
	}
	return at, !at.IsZero()
}

// lockChanged reports whether b shows another lock than a: another record
// revision, another holder, a holder gone, or another number of readers.
func lockChanged(a, b wire.LockStatus) bool {
	if a.Revision != b.Revision || (a.Holder == nil) != (b.Holder == nil) || len(a.Readers) != len(b.Readers) {
		return true
	}
	return a.Holder != nil && a.Holder.Lease != b.Holder.Lease
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
