package lockstate

import (
	"fmt"

	"github.com/fencegate/fencegate/internal/assert"
	"github.com/fencegate/fencegate/wire"
)

// A counting semaphore NAME of N permits is N slots, each an ordinary
// resource record (wire.SlotResource(NAME, i)) granted, renewed,
// released and expired like any lock's, and one semaphore record under
// NAME that holds N (Record.Permits) and the FIFO queue across the slots.
// A semaphore acquire takes two decisions, each committed on its own
// record: DecideSemaphore on the semaphore's record (record N, join or
// keep the queue, or say which free slot the caller may try), then, when
// it may try, an ordinary DecideAcquire on that slot's record
// (SlotInput), which grants the slot's next fence. The safety of a
// permit is the slot's own: one holder per slot record, a fence above
// every fence that slot issued, checked at the slot's gate. The queue
// only orders who tries first; a race between two tries on one slot ends
// with one grant and one BUSY, and the loser decides again.

// SemaphoreOutcome is what a semaphore decision asks the shell to do.
type SemaphoreOutcome int

const (
	// SemaphoreTry: commit Record when non-nil, then acquire slot Slot
	// with SlotInput, without waiting.
	SemaphoreTry SemaphoreOutcome = iota + 1
	// SemaphoreQueued: commit Record when non-nil; the caller waits in
	// the semaphore's queue.
	SemaphoreQueued
)

// SemaphoreDecision is a semaphore decision.
type SemaphoreDecision struct {
	Outcome SemaphoreOutcome
	Record  *Record // the semaphore's new record; nil: no write
	Slot    int     // SemaphoreTry: the slot to try
}

// SlotFree reports whether a slot whose record is rec (nil: never used)
// could be granted at now: no live holder, lock-delay over, nobody
// queued on the slot itself.
func SlotFree(rec *Record, set Settings, now int64, lim Limits) bool {
	if rec == nil {
		return true
	}
	next, _ := Normalize(rec, set, now, lim)
	return next.Holder == nil && now >= next.FreeAtMs && len(next.Waiters) == 0
}

// SlotInput is the acquire of slot i of the semaphore in (a semaphore
// acquire): the same owner, request ID, operation, class and TTL, on the
// slot's resource, without waiting (the waiting is done in the
// semaphore's queue). The grant's operation root and request entry are
// the slot's, as for any acquire of that resource.
func (in AcquireInput) SlotInput(i int) AcquireInput {
	assert.That(in.Req.Permits > 0 && i >= 0 && uint64(i) < in.Req.Permits, "registry: slot %d of %s with %d permits", i, in.Req.Resource, in.Req.Permits)
	out := in
	out.Req.Resource = wire.SlotResource(in.Req.Resource, i)
	out.Req.Permits, out.Req.WaitMs = 0, 0
	out.Wait, out.DeadlineMs = false, 0
	return out
}

// SemaphoreOf checks that a request entry found for a semaphore acquire
// (a retry: the request was granted before) is a grant on one of its
// slots, and returns that slot's index.
func SemaphoreOf(in AcquireInput, own *RequestEntry) (int, error) {
	name, i, ok := wire.SlotOf(own.Grant.Resource)
	if !ok || name != in.Req.Resource || uint64(i) >= in.Req.Permits {
		return 0, fmt.Errorf("%w: request %s was issued for %s, not a slot of %s", wire.ErrRequestMismatch, in.Req.RequestID, own.Grant.Resource, in.Req.Resource)
	}
	return i, nil
}

// semaphoreStaleMs is how long a semaphore waiter may go unseen before
// any acquire of the semaphore drops its ticket as gone; a live waiter
// stamps itself (SeenMs) every semaphoreStampMs. A semaphore has no
// release that hands a slot to its head (a slot's release knows nothing
// of the queue), so a crashed head would otherwise block the queue until
// its deadline.
func semaphoreStaleMs(lim Limits) int64 { return 2 * int64(lim.HandoffClaimMs) }

// SemaphoreStampMs is how often a queued semaphore acquire must step to
// keep its ticket seen.
func SemaphoreStampMs(lim Limits) int64 { return int64(lim.HandoffClaimMs) / 2 }

// DecideSemaphore decides a semaphore acquire in (in.Req.Permits > 0)
// against the semaphore's record rec and its slots' records (slots[i]
// is slot i's, nil when it has none; read just before), judged free or
// not at now (SlotFree). The
// caller may try a slot when fewer callers are ahead of it in the queue
// than slots are free: the queue's k-th ticket (from 0) tries the k-th
// free slot, and an acquire not queued counts as behind every ticket. It
// never grants; a caller that may not try waits in the queue (or gets
// ErrBusy / ErrWaitTimeout). lost says the caller just lost a race for
// a slot it was told to try: a waiting caller not yet queued then joins
// the queue instead of trying again, so a caller contends for slots
// without a ticket at most once, and afterwards by its place. The
// record's Permits is set by the first
// acquire and every later one must name the same; a name used as a
// plain lock is no semaphore (ErrPermitsMismatch).
func DecideSemaphore(rec *Record, slots []*Record, set Settings, in AcquireInput, lost bool, now int64, lim Limits) (SemaphoreDecision, error) {
	n := in.Req.Permits
	assert.That(n > 0 && uint64(len(slots)) == n, "registry: semaphore %s: %d slots read for %d permits", in.Req.Resource, len(slots), n)
	free := make([]bool, n)
	for i, sr := range slots {
		free[i] = SlotFree(sr, set, now, lim)
	}
	switch {
	case rec.Permits == 0 && (rec.HighestFence > 0 || occupied(rec) || len(rec.Waiters) > 0):
		return SemaphoreDecision{}, fmt.Errorf("%w: %s is a plain lock, not a semaphore", wire.ErrPermitsMismatch, in.Req.Resource)
	case rec.Permits != 0 && rec.Permits != n:
		return SemaphoreDecision{}, fmt.Errorf("%w: %s is a semaphore of %d permits, not %d", wire.ErrPermitsMismatch, in.Req.Resource, rec.Permits, n)
	}
	if lim.IssuerEpoch < set.RevokedBelowEpoch {
		return SemaphoreDecision{}, fmt.Errorf("%w: this registry's epoch %d is below %d", wire.ErrEpochRevoked, lim.IssuerEpoch, set.RevokedBelowEpoch)
	}
	next, changed := rec.Clone(), false
	if next.Permits == 0 {
		next.Permits, changed = n, true
	}
	key := in.Key()
	live := next.Waiters[:0:0]
	for _, w := range next.Waiters {
		mine := (RequestKey{Owner: w.Owner, RequestID: w.RequestID}) == key
		if w.DeadlineMs > now && (mine || now-w.SeenMs < semaphoreStaleMs(lim)) {
			live = append(live, w)
		}
	}
	if len(live) != len(next.Waiters) {
		next.Waiters, changed = live, true
	}
	idx := waiterIndex(next, key)
	pos := idx
	if pos < 0 {
		pos = len(next.Waiters)
	}
	if slot := nthFree(free, pos); slot >= 0 && !(lost && idx < 0 && in.Wait && now < in.DeadlineMs) {
		return SemaphoreDecision{Outcome: SemaphoreTry, Record: recordIf(next, changed), Slot: slot}, nil
	}
	if !in.Wait || now >= in.DeadlineMs {
		sentinel := wire.ErrBusy
		if in.Wait {
			sentinel = wire.ErrWaitTimeout
		}
		return SemaphoreDecision{}, &wire.BusyError{Sentinel: sentinel, BusyDetail: wire.BusyDetail{
			Resource: in.Req.Resource, Waiters: len(next.Waiters), ReadAt: fromMs(now),
		}}
	}
	digest := paramsDigest(in.Req.Resource, in.Req.OperationID, in.Req.OperationClass, in.TTLMs)
	queued, err := queueOrRefresh(next, idx, in, digest, now, lim)
	if err != nil {
		return SemaphoreDecision{}, err
	}
	switch {
	case queued:
		changed = true
	case now-next.Waiters[idx].SeenMs >= SemaphoreStampMs(lim):
		next.Waiters[idx].SeenMs = now
		changed = true
	}
	return SemaphoreDecision{Outcome: SemaphoreQueued, Record: recordIf(next, changed)}, nil
}

// DecideSemaphoreLeave removes the caller's ticket from the semaphore's
// queue: it was granted a slot, or gave up. Nil when it holds none.
func DecideSemaphoreLeave(rec *Record, key RequestKey) *Record {
	i := waiterIndex(rec, key)
	if i < 0 {
		return nil
	}
	next := rec.Clone()
	next.Waiters = append(next.Waiters[:i:i], next.Waiters[i+1:]...)
	return next
}

// nthFree returns the index of the k-th (from 0) free slot, or -1.
func nthFree(free []bool, k int) int {
	for i, f := range free {
		if !f {
			continue
		}
		if k == 0 {
			return i
		}
		k--
	}
	return -1
}

func recordIf(rec *Record, changed bool) *Record {
	if changed {
		return rec
	}
	return nil
}
