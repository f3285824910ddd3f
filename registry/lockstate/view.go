package lockstate

import (
	"time"

	"github.com/fencegate/fencegate/wire"
)

// LockView is what anyone allowed to see resource may know of rec, a
// normalized record, at now: the holder, since when and until when, the
// fences, lock-delay, the readers, and the queue (owners and since when,
// never request IDs). rev is the store revision it was read at.
func LockView(resource string, rec *Record, now int64, rev uint64) wire.LockStatus {
	v := wire.LockStatus{
		Resource: resource, HighestFence: rec.HighestFence, Floor: rec.Floor,
		Waiters: make([]wire.LockWaiter, 0, len(rec.Waiters)), ReadAt: fromMs(now), Revision: rev,
		Permits: rec.Permits,
	}
	if h := rec.Holder; h != nil {
		v.Holder = HolderView(h)
	}
	if !occupied(rec) && rec.FreeAtMs > now {
		at := fromMs(rec.FreeAtMs)
		v.FreeAt = &at
	}
	for i := range rec.Readers {
		v.Readers = append(v.Readers, *HolderView(&rec.Readers[i]))
	}
	if rec.ReadersFromMs > now {
		at := fromMs(rec.ReadersFromMs)
		v.ReadersFrom = &at
	}
	for _, w := range rec.Waiters {
		lw := wire.LockWaiter{Owner: w.Owner, OperationClass: w.OperationClass, LockSet: w.Members, Read: w.Read}
		if w.JoinedMs != 0 {
			lw.Since = fromMs(w.JoinedMs)
		}
		v.Waiters = append(v.Waiters, lw)
	}
	return v
}

// HolderView is what a lock view shows of the holder h: who, which lease
// and fence, since when and until when (its expiry as last renewed).
func HolderView(h *Holder) *wire.LockHolder {
	return &wire.LockHolder{
		Owner: h.Grant.Owner, Lease: h.Grant.Lease, Fence: h.Grant.FenceToken, OperationClass: h.Grant.OperationClass,
		Since: fromMs(h.Grant.IssuedAtMs), ExpiresAt: fromMs(h.ExpiresAtMs), LockSet: h.Members,
	}
}

// fromMs converts the registry's Unix milliseconds to the UTC instant the
// views and grants carry. It reads no clock.
func fromMs(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
