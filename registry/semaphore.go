package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// A semaphore acquire (wire.AcquireRequest.Permits > 0) is an Acquisition
// whose steps decide on two records in turn (see lockstate's semaphore.go):
// the semaphore's own record, NAME (its permits and its FIFO queue), and
// then one free slot's record, NAME/_slot.i, acquired as an ordinary
// resource without waiting. Each is its own compare-and-swap; no store
// transaction spans both. What that costs is order, never safety: a slot
// has one holder and one fence sequence whatever the queue says, and a
// caller that loses a race for a slot decides again. A caller granted a
// slot then leaves the queue; if it dies in between, its ticket is
// dropped once unseen for lockstate's stale bound (2 × HandoffClaimMs) or
// at its deadline.

// semaphoreScanExtra is how many records beyond the permits one page of
// the slots' listing asks for: names under NAME/_slot.i/ that are not
// slots (a plain resource may be named so) share the prefix.
const semaphoreScanExtra = 16

// readSlots lists the records of in's slots (one linearizable listing,
// paged): recs[i] is slot i's, nil when it has none.
func (r *Registry) readSlots(ctx context.Context, in lockstate.AcquireInput) ([]*lockstate.Record, error) {
	n := int(in.Req.Permits)
	recs := make([]*lockstate.Record, n)
	prefix := in.Req.Resource + "/" + wire.SlotSegmentPrefix
	for after := ""; ; {
		page, err := r.store.ScanRecords(ctx, prefix, after, n+semaphoreScanExtra)
		if err != nil {
			return nil, storeError("scan slots", err)
		}
		for _, rs := range page {
			if name, i, ok := wire.SlotOf(rs.Resource); ok && name == in.Req.Resource && i < n {
				recs[i] = rs.Record
			}
		}
		if len(page) < n+semaphoreScanExtra {
			return recs, nil
		}
		after = page[len(page)-1].Resource
	}
}

// slotsChangeAt is the earliest instant after now at which one of the
// slots could become free without a write (an expiry, lock-delay
// ending); 0 for none.
func (r *Registry) slotsChangeAt(recs []*lockstate.Record, set lockstate.Settings, now int64) int64 {
	var out int64
	for _, rec := range recs {
		if rec == nil {
			continue
		}
		next, _ := lockstate.Normalize(rec, set, now, r.lim)
		if at, changes := lockstate.ChangesAt(next, now, r.lim); changes && (out == 0 || at < out) {
			out = at
		}
	}
	return out
}

// stepSemaphore is Step for a semaphore acquire: decide on the
// semaphore's record, and when the caller may, take the free slot it
// was told to try.
func (a *Acquisition) stepSemaphore(ctx context.Context) bool {
	r, in := a.r, a.in
	key := in.Key()
	lost := false
	for range acquireStepsMax {
		slots, err := r.readSlots(ctx, in)
		if err != nil {
			return a.failSemaphore(ctx, err)
		}
		var (
			dec lockstate.SemaphoreDecision
			own *lockstate.RequestEntry
			at  int64
		)
		// An acquire's first decision may stand on the semaphore's record
		// as this registry last saw it (no write needs it fresh: a stale
		// queue costs order, and the slot's commit decides who holds it).
		// A queued one reads (its wake may come from another replica's
		// write this registry has not seen), and so does one after a lost
		// try, which also shows the request's entry if a concurrent call
		// of the same request was granted meanwhile.
		warm := !lost && !a.queued
		s, rev, err := r.casLoopMode(ctx, in.Req.Resource, []lockstate.RequestKey{key}, warm, warm, func(s *Snapshot, now int64) (*Write, error) {
			at = now
			if own = s.slot(key).Entry; own != nil {
				return nil, nil // granted before: answer from the slot
			}
			var err error
			if dec, err = lockstate.DecideSemaphore(recordOf(s), slots, s.Settings, in, lost, now, r.lim); err != nil {
				return nil, err
			}
			w := r.writeFor(s, dec.Record, nil)
			if w != nil {
				// As for a plain queue: a request that has an answer never
				// queues (its entry must still be absent).
				w.Requests = append(w.Requests, RequestWrite{Key: key, Compare: true, ModRev: s.slot(key).ModRev})
			}
			return w, nil
		})
		if err != nil {
			return a.failSemaphore(ctx, err)
		}
		slot := dec.Slot
		if own != nil {
			if slot, err = lockstate.SemaphoreOf(in, own); err != nil {
				return a.failSemaphore(ctx, err)
			}
		} else if dec.Outcome == lockstate.SemaphoreQueued {
			a.queued = true
			a.from = max(rev, s.Revision) + 1
			a.wakeMs = r.semaphoreWake(in, at, r.slotsChangeAt(slots, s.Settings, at))
			return false
		}
		if done := a.takeSlot(ctx, in.SlotInput(slot), own != nil); done {
			return true
		}
		lost = true
	}
	if !in.Wait {
		// Lost every race for a slot seen free: as busy as a full one.
		return a.failSemaphore(ctx, &wire.BusyError{Sentinel: wire.ErrBusy, BusyDetail: wire.BusyDetail{Resource: in.Req.Resource, ReadAt: fromMs(r.now())}})
	}
	return a.failSemaphore(ctx, fmt.Errorf("%w: %s: %d decisions in a row without an answer", wire.ErrConflict, in.Req.Resource, acquireStepsMax))
}

// takeSlot acquires slot's resource for the caller, without waiting;
// answered says the request's entry names this slot (a retry). The
// decision may stand on the slot's record as this registry last saw it:
// the commit compares it (and the request's entry as absent), so a stale
// cache costs a failed compare and a fresh read, never a second holder.
// It reports false when the caller must decide again: the slot went to
// another caller since it was read, its old entry was purged, or, for a
// request not yet answered, the request was granted meanwhile by a
// concurrent call of the same request ID on another slot (its entry
// then names that slot: the next decision answers from it).
func (a *Acquisition) takeSlot(ctx context.Context, slot lockstate.AcquireInput, answered bool) bool {
	r := a.r
	dec, s, rev, now, err := r.acquireStep(ctx, slot, true, false)
	switch {
	case errors.Is(err, wire.ErrBusy), !answered && errors.Is(err, wire.ErrRequestMismatch):
		return false
	case err != nil:
		a.failSemaphore(ctx, err)
		return true
	}
	var is wire.Issued
	switch dec.Outcome {
	case lockstate.AcquireGranted:
		is, err = r.issueFresh(dec.Body, rev, now+int64(slot.TTLMs), rev, now, s.Settings)
	case lockstate.AcquireExisting:
		is, err = r.existing(&s, slot.Key(), now, false)
	default: // purged, or handed: look again
		return false
	}
	r.leaveSemaphore(ctx, a.in)
	return a.finish(a.sinceArrival(now, is, err))
}

// failSemaphore ends a semaphore acquire with err, withdrawing its ticket
// unless its wait ran out (it keeps its place for WaiterGraceMs, for the
// same request asking again).
func (a *Acquisition) failSemaphore(ctx context.Context, err error) bool {
	if (a.queued || a.in.Wait && ctx.Err() != nil) && !errors.Is(err, wire.ErrWaitTimeout) {
		a.r.cancelWait(ctx, a.in)
	}
	return a.finish(wire.Issued{}, err)
}

// leaveSemaphore removes the caller's ticket from the semaphore's queue
// once it holds a slot, best effort: a ticket left behind is dropped
// once unseen for the stale bound, or at its deadline.
func (r *Registry) leaveSemaphore(ctx context.Context, in lockstate.AcquireInput) {
	if !in.Wait {
		return // never queued
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWaitTimeoutMs*time.Millisecond)
	defer cancel()
	_, _, _ = r.casLoop(ctx, in.Req.Resource, nil, true, func(s *Snapshot, now int64) (*Write, error) {
		return r.writeFor(s, lockstate.DecideSemaphoreLeave(recordOf(s), in.Key()), nil), nil
	})
}

// semaphoreWake is when a queued semaphore acquire steps again if nothing
// wakes it first: a slot's expiry or lock-delay ending, its deadline, the
// next stamp that keeps its ticket seen, at most WaitPollMsMax away.
func (r *Registry) semaphoreWake(in lockstate.AcquireInput, now, changeMs int64) int64 {
	wake := min(now+int64(r.cfg.WaitPollMsMax), now+lockstate.SemaphoreStampMs(r.lim), in.DeadlineMs)
	if changeMs > now {
		wake = min(wake, changeMs)
	}
	return max(wake, now+1)
}

// acquireSemaphore is Acquire for a semaphore: the Acquisition stepped on
// wakes from watches of the semaphore's record and of every slot's.
func (r *Registry) acquireSemaphore(ctx context.Context, a *Acquisition) (wire.Issued, error) {
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var wake <-chan struct{}
	for !a.Step(ctx, false) {
		if wake == nil {
			wake = r.watchSemaphore(wctx, a.in, a.watchFrom())
		}
		timer := r.clock.After(a.WakeAt().Sub(r.clock.Now()))
		select {
		case <-ctx.Done():
			a.Abandon(ctx)
			return wire.Issued{}, fmt.Errorf("registry: acquire %s: waiting: %w", a.in.Req.Resource, ctx.Err())
		case <-wake:
		case <-timer:
		}
	}
	return a.Result()
}

// watchSemaphore merges watches of the semaphore's record and its slots'
// into one wake-up channel (coalesced). A watch that fails or ends only
// leaves the poll.
func (r *Registry) watchSemaphore(ctx context.Context, in lockstate.AcquireInput, fromRev uint64) <-chan struct{} {
	names := []string{in.Req.Resource}
	for i := range int(in.Req.Permits) {
		names = append(names, wire.SlotResource(in.Req.Resource, i))
	}
	return r.watchRecords(ctx, names, fromRev)
}
