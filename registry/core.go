package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/fencegate/fencegate/grant"
)

// This file holds what every decision shares: bringing a record up to the
// clock (normalize) and the derived names a grant carries. Everything in the
// core_*.go files is a pure function of its arguments: no I/O, no clock, no
// randomness, no map iteration.

// entryPut is a request entry the core wants written. Own marks the
// acquiring request's own entry, whose absence the write must compare;
// the entries of ending leases need no compare because only a write that
// also compares their resource's record ever changes a HELD entry.
type entryPut struct {
	key   RequestKey
	entry RequestEntry
	own   bool
}

// normalize brings rec up to now: a holder whose epoch is revoked, whose
// fence is from a generation before the current one (a bump ended it, as
// an operator's break would), or whose lease expired ends (expiry opens
// lock-delay, revocation and a bump do not: the fence keeps the old
// holder's writes out), and waiters past their deadline leave the queue.
// It returns a new record, the entries of leases that ended, and whether
// anything changed.
func normalize(rec *Record, set Settings, now int64, cfg Config) (*Record, []entryPut, bool) {
	out := rec.clone()
	var puts []entryPut
	changed := false
	if h := out.Holder; h != nil {
		state, at, bumped := grant.State(""), int64(0), false
		switch {
		case h.Grant.IssuerEpoch < set.RevokedBelowEpoch:
			state, at = grant.StateRevoked, now
			out.FreeAtMs = max(out.FreeAtMs, now)
		case endsWithBump(h.Grant.FenceToken, set):
			state, at, bumped = grant.StateExpired, min(now, h.ExpiresAtMs), true
			out.FreeAtMs = max(out.FreeAtMs, now)
		case now >= h.ExpiresAtMs:
			state, at = grant.StateExpired, h.ExpiresAtMs
			out.FreeAtMs = max(out.FreeAtMs, h.ExpiresAtMs+int64(cfg.LockDelayMs))
		}
		if state != "" {
			puts = append(puts, endHolder(out, state, at))
			out.Ended[len(out.Ended)-1].Broken = bumped
			changed = true
		}
	}
	live := out.Waiters[:0:0]
	for i, w := range out.Waiters {
		if w.DeadlineMs > now {
			live = append(live, w)
		} else if i == 0 && out.Holder == nil {
			out.FreeAtMs = max(out.FreeAtMs, now) // the next head gets a full claim window
		}
	}
	if len(live) != len(out.Waiters) {
		out.Waiters, changed = live, true
	}
	return out, puts, changed
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
func stampDue(rec *Record, idx int, now int64, cfg Config) bool {
	return idx > 0 && rec.Holder == nil && now >= rec.FreeAtMs+int64(cfg.HandoffClaimMs)/2 &&
		rec.Waiters[idx].SeenMs < rec.FreeAtMs
}

// skipVanishedWaiters drops the head waiter of a free resource once its
// claim window (HandoffClaimMs from FreeAtMs) has passed, and with it
// every other waiter but keep (the caller's own ticket, -1 for none) not
// seen since the resource became free. The next head gets a full window.
// rec must be a private, normalized copy; only a caller that is not the
// head calls this, so nobody skips itself.
func skipVanishedWaiters(rec *Record, keep RequestKey, now int64, cfg Config) bool {
	if rec.Holder != nil || len(rec.Waiters) == 0 || now < rec.FreeAtMs+int64(cfg.HandoffClaimMs) {
		return false
	}
	live := rec.Waiters[:0:0]
	for i, w := range rec.Waiters[1:] {
		if w.SeenMs >= rec.FreeAtMs || (RequestKey{Owner: w.Owner, RequestID: w.RequestID}) == keep {
			live = append(live, rec.Waiters[i+1])
		}
	}
	rec.Waiters = live
	rec.FreeAtMs = now
	return true
}

// endHolder moves rec's holder to Ended in state at instant at, and
// returns the final request entry to write. rec must be a private copy.
func endHolder(rec *Record, state grant.State, at int64) entryPut {
	h := rec.Holder
	rec.Holder = nil
	rec.Ended = append(rec.Ended, EndedLease{
		Lease: h.Grant.Lease, Owner: h.Grant.Owner, State: state, AtMs: at,
	})
	if n := len(rec.Ended); n > EndedLeasesMax {
		rec.Ended = append([]EndedLease(nil), rec.Ended[n-EndedLeasesMax:]...)
	}
	return entryPut{
		key:   RequestKey{Owner: h.Grant.Owner, RequestID: h.Grant.RequestID},
		entry: RequestEntry{Grant: h.Grant, ParamsDigest: h.ParamsDigest, State: state, EndedAtMs: at},
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
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d", resource, owner, requestID, issuedAtMs)))
	return fmt.Sprintf("l%d-%s", fence, hex.EncodeToString(sum[:4]))
}

// entryState is the state of the grant recorded in entry, judged against
// the resource record and settings at now.
func entryState(rec *Record, entry *RequestEntry, set Settings, now int64) grant.State {
	if entry.Grant.IssuerEpoch < set.RevokedBelowEpoch {
		return grant.StateRevoked
	}
	if entry.State == grant.StateHeld && endsWithBump(entry.Grant.FenceToken, set) {
		return grant.StateExpired // a bump ended it (normalize, at the next write)
	}
	if h := rec.Holder; h != nil && h.Grant.Lease == entry.Grant.Lease &&
		h.Grant.Owner == entry.Grant.Owner && h.Grant.RequestID == entry.Grant.RequestID {
		if now >= h.ExpiresAtMs {
			return grant.StateExpired
		}
		return grant.StateHeld
	}
	if entry.State == grant.StateHeld {
		// Not the holder, yet not marked ended: every write that ends a
		// holder marks its entry, so this is damage; never report HELD.
		return grant.StateExpired
	}
	return entry.State
}

// statusValidUntil is how long a status proof issued at now may be relied
// on: never past the lease's expiry minus the skew bound, never before now.
func statusValidUntil(state grant.State, expiresAtMs, now int64, cfg Config) int64 {
	until := now + int64(cfg.StatusProofTTLMs)
	if state == grant.StateHeld {
		until = min(until, expiresAtMs-int64(cfg.ClockSkewMaxMs))
	}
	return max(until, now)
}

// heldUntilMs is the held statement of a grant issued at now with ttlMs:
// what a status proof issued with it would say (statusValidUntil), never
// past the lease's first expiry minus the skew bound, never before now.
// 0 (the earlier form, no statement) when cfg.SeparateStatus.
func heldUntilMs(now int64, ttlMs uint64, cfg Config) int64 {
	if cfg.SeparateStatus {
		return 0
	}
	return statusValidUntil(grant.StateHeld, now+int64(ttlMs), now, cfg)
}

// retained reports whether entry is still inside its retention at now.
func retained(entry *RequestEntry, now int64, cfg Config) bool {
	return entry.State == grant.StateHeld || now < entry.EndedAtMs+int64(cfg.RequestRetentionMs)
}
