package lockstate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// This file holds what every decision shares: bringing a record up to the
// clock (Normalize), the state of a request entry judged against its
// record (EntryState, Retained), and the derived names a grant carries.

// EntryPut is the request entry of a grant, which a decision wants
// written once, in the granting write; the write compares its absence. A
// lease's end is never written to its entry: EntryState and endedAtMs
// read it from the record (its holder, its ended leases, its fences).
type EntryPut struct {
	Key   RequestKey
	Entry RequestEntry
}

// Normalize brings rec up to now: a holder whose epoch is revoked, whose
// fence is from a generation before the current one (a bump ended it, as
// an operator's break would), or whose lease expired ends (expiry opens
// lock-delay, revocation and a bump do not: the fence keeps the old
// holder's writes out), and waiters past their deadline leave the queue.
// It returns a new record and whether anything changed.
func Normalize(rec *Record, set Settings, now int64, lim Limits) (*Record, bool) {
	out := rec.Clone()
	changed := false
	if h := out.Holder; h != nil {
		if state, at, freeAt, bumped := leaseEnds(h, set, now, lim); state != "" {
			endHolder(out, state, at)
			out.Ended[len(out.Ended)-1].Broken = bumped
			out.FreeAtMs = max(out.FreeAtMs, freeAt)
			changed = true
		}
	}
	if endReaders(out, set, now, lim) {
		changed = true
	}
	live := out.Waiters[:0:0]
	for i, w := range out.Waiters {
		if w.DeadlineMs > now {
			live = append(live, w)
		} else if i == 0 && !occupied(out) {
			out.FreeAtMs = max(out.FreeAtMs, now) // the next head gets a full claim window
		}
	}
	if len(live) != len(out.Waiters) {
		out.Waiters, changed = live, true
	}
	return out, changed
}

// leaseEnds says whether the lease h (a writer's or a reader's) has
// ended by now, and how: revoked (at now), ended by a bump (bumped, at
// the earlier of now and its expiry) or expired (at its expiry); state
// is "" while it lives. freeAt is the earliest instant the resource may
// be granted after it: now, or for an expiry the expiry + LockDelayMs.
func leaseEnds(h *Holder, set Settings, now int64, lim Limits) (state grant.State, at, freeAt int64, bumped bool) {
	switch {
	case h.Grant.IssuerEpoch < set.RevokedBelowEpoch:
		return grant.StateRevoked, now, now, false
	case endsWithBump(h.Grant.FenceToken, set):
		return grant.StateExpired, min(now, h.ExpiresAtMs), now, true
	case now >= h.ExpiresAtMs:
		return grant.StateExpired, h.ExpiresAtMs, h.ExpiresAtMs + int64(lim.LockDelayMs), false
	}
	return "", 0, 0, false
}

// Vanished waiters. A waiter whose caller is gone (a replica killed
// mid-wait, a client that dropped its connection) keeps its ticket until
// its deadline, or until it lets a free resource's claim window pass. The
// window works in two halves: the head has HandoffClaimMs/2 from FreeAtMs
// to claim alone; from then on every live waiter behind it stamps itself
// (SeenMs, one write each, only when a head is slow), and once the whole
// window has passed the next waiter to look drops the head and every
// waiter not seen since the resource became free, in one write. Every
// live waiter wakes at both instants (nextWake), so a live one always
// stamps in time; ghosts leave together instead of one window each.

// stampDue reports whether the waiter at idx should stamp itself alive:
// the resource is free, its head has had half the claim window, and the
// waiter has not been seen since it became free.
func stampDue(rec *Record, idx int, now int64, lim Limits) bool {
	return idx > 0 && !occupied(rec) && now >= claimFrom(rec)+int64(lim.HandoffClaimMs)/2 &&
		rec.Waiters[idx].SeenMs < claimFrom(rec)
}

// skipVanishedWaiters drops the head waiter of a free resource once its
// claim window (HandoffClaimMs from FreeAtMs, for a reader not before ReadersFromMs: claimFrom) has passed, and with it
// every other waiter but keep (the caller's own ticket, -1 for none) not
// seen since the resource became free. The next head gets a full window.
// rec must be a private, normalized copy; only a caller that is not the
// head calls this, so nobody skips itself.
//
// A lock set's ticket at the head is blocked, not vanished, while another
// member is busy: it cannot claim this resource alone. It is dropped only
// once unseen for the semaphore's stale bound (2 × HandoffClaimMs); a
// live set stamps itself more often than that (setStampDue). Until then
// nothing is dropped.
func skipVanishedWaiters(rec *Record, keep RequestKey, now int64, lim Limits) bool {
	if occupied(rec) || len(rec.Waiters) == 0 || now < claimFrom(rec)+int64(lim.HandoffClaimMs) {
		return false
	}
	from := claimFrom(rec)
	if h := rec.Waiters[0]; len(h.Members) > 0 && now-h.SeenMs < semaphoreStaleMs(lim) {
		return false
	}
	live := rec.Waiters[:0:0]
	for i, w := range rec.Waiters[1:] {
		if w.SeenMs >= from || (RequestKey{Owner: w.Owner, RequestID: w.RequestID}) == keep {
			live = append(live, rec.Waiters[i+1])
		}
	}
	rec.Waiters = live
	rec.FreeAtMs = now
	return true
}

// endHolder moves rec's holder to Ended in state at instant at. rec must
// be a private copy. The lease's request entry is not written again: its
// end is read from Ended (EntryState).
func endHolder(rec *Record, state grant.State, at int64) {
	h := rec.Holder
	rec.Holder = nil
	appendEnded(rec, h, state, at)
}

// appendEnded remembers the lease h as ended in state at instant at,
// keeping the last EndedLeasesMax. rec must be a private copy.
func appendEnded(rec *Record, h *Holder, state grant.State, at int64) {
	rec.Ended = append(rec.Ended, EndedLease{
		Lease: h.Grant.Lease, Owner: h.Grant.Owner, State: state, AtMs: at,
	})
	if n := len(rec.Ended); n > EndedLeasesMax {
		rec.Ended = append([]EndedLease(nil), rec.Ended[n-EndedLeasesMax:]...)
	}
}

// findEnded returns the most recent ended lease named lease, if remembered.
func findEnded(rec *Record, lease string) (EndedLease, bool) {
	for i := len(rec.Ended) - 1; i >= 0; i-- {
		if rec.Ended[i].Lease == lease {
			return rec.Ended[i], true
		}
	}
	return EndedLease{}, false
}

// waiterIndex returns the queue position of (owner, requestID), or -1.
func waiterIndex(rec *Record, key RequestKey) int {
	for i, w := range rec.Waiters {
		if w.Owner == key.Owner && w.RequestID == key.RequestID {
			return i
		}
	}
	return -1
}

// paramsDigest binds what makes two acquires "the same request". Each
// field is framed by its length so no two tuples collide.
func paramsDigest(resource, operationID, operationClass string, ttlMs uint64) string {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{resource, operationID, operationClass} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], ttlMs)
	h.Write(n[:])
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// leaseID names a lease deterministically: its fence, then a short hash of
// who asked when, so two grants never share a lease ID on one resource even
// if a restored store repeats a fence.
func leaseID(resource, owner, requestID string, fence uint64, issuedAtMs int64) string {
	var buf [256]byte // the hashed input, on the stack unless the names are long
	in := append(append(append(append(append(append(buf[:0], resource...), 0), owner...), 0), requestID...), 0)
	sum := sha256.Sum256(strconv.AppendInt(in, issuedAtMs, 10))
	var id [1 + 20 + 1 + 8]byte // "l", the fence, "-", 4 bytes in hex
	out := strconv.AppendUint(append(id[:0], 'l'), fence, 10)
	return string(hex.AppendEncode(append(out, '-'), sum[:4]))
}

// ChangesAt is the earliest instant after now at which rec changes with
// no write: its holder expiring, lock-delay ending, the resource coming
// free, the head waiter's claim window reaching its half or its end, a
// blocked lock set's head turning stale, a reader expiring, readers
// admitted again after a downgrade (the instants a queued waiter
// must look again). changes is false when
// none is ahead.
func ChangesAt(rec *Record, now int64, lim Limits) (at int64, changes bool) {
	expiry := int64(-1 << 40) // no holder: far in the past, never a candidate
	if rec.Holder != nil {
		expiry = rec.Holder.ExpiresAtMs
	}
	stale := int64(-1 << 40) // a blocked set head's stale instant, when there is one
	if !occupied(rec) && len(rec.Waiters) > 0 && len(rec.Waiters[0].Members) > 0 {
		stale = rec.Waiters[0].SeenMs + semaphoreStaleMs(lim)
	}
	instants := []int64{
		expiry, expiry + int64(lim.LockDelayMs),
		rec.FreeAtMs, claimFrom(rec) + int64(lim.HandoffClaimMs)/2, claimFrom(rec) + int64(lim.HandoffClaimMs),
		stale, rec.ReadersFromMs,
	}
	for _, h := range rec.Readers {
		instants = append(instants, h.ExpiresAtMs, h.ExpiresAtMs+int64(lim.LockDelayMs))
	}
	for _, t := range instants {
		if t > now && (!changes || t < at) {
			at, changes = t, true
		}
	}
	return at, changes
}

// HoldsEntry reports whether entry's grant is rec's holder or one of its
// readers (live, or expired by the clock with no write yet to say so).
func HoldsEntry(rec *Record, entry *RequestEntry) bool { return LeaseOf(rec, entry) != nil }

// LeaseOf is entry's lease in rec: the holder, or the reader, whose
// grant it is; nil when it is neither (expiry not judged).
func LeaseOf(rec *Record, entry *RequestEntry) *Holder {
	is := func(h *Holder) bool {
		return h.Grant.Lease == entry.Grant.Lease && h.Grant.Owner == entry.Grant.Owner && h.Grant.RequestID == entry.Grant.RequestID
	}
	if h := rec.Holder; h != nil && is(h) {
		return h
	}
	for i := range rec.Readers {
		if is(&rec.Readers[i]) {
			return &rec.Readers[i]
		}
	}
	return nil
}

// EntryState is the state of the grant recorded in entry, judged against
// the resource record and settings at now. An entry is written once, at
// grant (State HELD); its end is read from the record: the holder (expiry
// judged lazily), or the ended lease Ended remembers. A lease that fell
// out of Ended (EndedLeasesMax later leases ended) answers EXPIRED — what
// a status proof of any ended lease means to a gate — and so does one the
// record cannot place (a record older than the entry): never HELD unless
// it is the holder. An entry an older registry wrote again at the lease's
// end (State not HELD) keeps the state it holds.
func EntryState(rec *Record, entry *RequestEntry, set Settings, now int64) grant.State {
	switch {
	case entry.Grant.IssuerEpoch < set.RevokedBelowEpoch:
		return grant.StateRevoked
	case entry.State != grant.StateHeld:
		return entry.State
	case HoldsEntry(rec, entry):
		if now >= LeaseOf(rec, entry).ExpiresAtMs || endsWithBump(entry.Grant.FenceToken, set) {
			return grant.StateExpired // a bump ends it as a break does (Normalize, at the next write)
		}
		return grant.StateHeld
	}
	if e, ok := findEnded(rec, entry.Grant.Lease); ok && e.Owner == entry.Grant.Owner {
		return e.State
	}
	return grant.StateExpired
}

// endedAtMs is, judged against rec, when entry's lease ended or a later
// instant: ok is false while it may not have ended (it is the holder,
// live or expired with no write yet) or the record cannot place it. A
// lease that fell out of Ended ended before the oldest lease Ended
// remembers was granted, so before that lease ended (and before the
// holder's grant): that instant, plus the clock skew between the replicas
// that wrote them, bounds it from above, and retention counts from there.
func endedAtMs(rec *Record, entry *RequestEntry, lim Limits) (int64, bool) {
	if entry.State != grant.StateHeld {
		return entry.EndedAtMs, true
	}
	if HoldsEntry(rec, entry) {
		return 0, false
	}
	if e, ok := findEnded(rec, entry.Grant.Lease); ok && e.Owner == entry.Grant.Owner {
		return e.AtMs, true
	}
	if _, read := wire.ReadOf(entry.Grant.Resource); read {
		// A reader's fence is the last writer's: a later grant need not
		// be above it. It fell out of Ended only if EndedLeasesMax leases
		// ended after it.
		if len(rec.Ended) < EndedLeasesMax {
			return 0, false // a record older than the entry
		}
		return rec.Ended[0].AtMs + int64(lim.ClockSkewMaxMs), true
	}
	if entry.Grant.FenceToken >= rec.HighestFence {
		return 0, false // not superseded by a later grant: a record older than the entry
	}
	switch {
	case len(rec.Ended) > 0:
		return rec.Ended[0].AtMs + int64(lim.ClockSkewMaxMs), true
	case rec.Holder != nil:
		return rec.Holder.Grant.IssuedAtMs + int64(lim.ClockSkewMaxMs), true
	}
	return 0, false
}

// StatusValidUntil is how long a status proof issued at now may be relied
// on: never past the lease's expiry minus the skew bound, never before now.
func StatusValidUntil(state grant.State, expiresAtMs, now int64, lim Limits) int64 {
	until := now + int64(lim.StatusProofTTLMs)
	if state == grant.StateHeld {
		until = min(until, expiresAtMs-int64(lim.ClockSkewMaxMs))
	}
	return max(until, now)
}

// heldUntilMs is the held statement of a grant issued at now with ttlMs:
// what a status proof issued with it would say (StatusValidUntil), never
// past the lease's first expiry minus the skew bound, never before now.
// 0 (the earlier form, no statement) when lim.SeparateStatus.
func heldUntilMs(now int64, ttlMs uint64, lim Limits) int64 {
	if lim.SeparateStatus {
		return 0
	}
	return StatusValidUntil(grant.StateHeld, now+int64(ttlMs), now, lim)
}

// Retained reports whether entry is still inside its retention at now,
// judged against its resource's record rec.
func Retained(rec *Record, entry *RequestEntry, now int64, lim Limits) bool {
	at, ended := endedAtMs(rec, entry, lim)
	return !ended || now < at+int64(lim.RequestRetentionMs)
}
