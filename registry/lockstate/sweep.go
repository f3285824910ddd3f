package lockstate

import "github.com/fencegate/fencegate/grant"

// The retention sweep's decisions. Each request entry has an item in a
// sweep index (registry.SweepItem) that says when to look at it next; the
// sweep walks the index from its oldest end up to now and, for each item,
// reads the entry with its resource's record and asks JudgeSweep. An entry
// past retention is deleted with its item; any other moves its item to the
// first instant it could be due. So a sweep reads what is due, never the
// whole index, and an entry is looked at about once: its lease's first
// expiry plus the retention, which for a lease that was neither renewed
// nor released late is when it is due.

// FirstSweepMs is when the sweep first looks at the entry of a grant
// issued as body: its first expiry plus the retention. No lease ends later
// unless it was renewed, and retention counts from the end, so no entry is
// due before it.
func FirstSweepMs(body GrantBody, lim Limits) int64 {
	return max(body.IssuedAtMs, 0) + int64(body.TTLMs) + int64(lim.RequestRetentionMs)
}

// JudgeSweep decides, at now, on entry judged against its resource's
// record rec: due (delete it) when it is past its retention (Retained),
// else the instant to look again, never before now + 1: the end plus the
// retention when rec places the end; the holder's expiry plus the
// retention while entry's lease is rec's holder (a renewal moves the
// expiry; the sweep then looks again); now plus the retention when rec
// cannot place it. rec should be normalized first (a holder expired by the
// clock with no write yet ends at the next write, and only then does its
// end count).
func JudgeSweep(rec *Record, entry *RequestEntry, now int64, lim Limits) (due bool, nextMs int64) {
	retention := int64(lim.RequestRetentionMs)
	at, ended := endedAtMs(rec, entry, lim)
	switch {
	case ended && now >= at+retention:
		return true, 0
	case ended:
		nextMs = at + retention
	case HoldsEntry(rec, entry):
		nextMs = LeaseOf(rec, entry).ExpiresAtMs + retention
	default:
		nextMs = now + retention
	}
	return false, max(nextMs, now+1)
}

// EndedEntry is entry written again with the end rec places for it
// (State and EndedAtMs, the form an older registry wrote at a lease's
// end), for the sweep to keep when the entry is not yet due; nil when
// entry already carries its end or rec cannot place one (its lease may
// still be held). The sweep must write it: a lease that fell out of its
// record's Ended is placed by the oldest lease Ended remembers
// (endedAtMs), an instant that moves on with every later cycle of the
// resource, so an entry of a busy resource judged again from its record
// would never come due. Written down once, the end is an upper bound
// that stays one (a lease ends once), and the entry is due a retention
// after it. Every answer about the entry stays what it was (EntryState):
// the state Ended remembers, else EXPIRED.
func EndedEntry(rec *Record, entry *RequestEntry, lim Limits) *RequestEntry {
	if entry.State != grant.StateHeld {
		return nil
	}
	at, ok := endedAtMs(rec, entry, lim)
	if !ok {
		return nil
	}
	out := *entry
	out.State, out.EndedAtMs = grant.StateExpired, at
	if e, found := findEnded(rec, entry.Grant.Lease); found && e.Owner == entry.Grant.Owner {
		out.State = e.State
	}
	return &out
}
