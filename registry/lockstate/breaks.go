package lockstate

import (
	"fmt"
	"slices"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// An operator's break (fencegate break, Registry.Break) ends leases now,
// whoever holds them. Each ended lease is EXPIRED to every status query,
// marked broken, and its resource is free at once — no lock-delay: the
// next grant's fence is higher, so the old holder's late writes are
// refused at every gate once the next holder has written, whatever its
// clock says. In the same write each queue's head is handed the lease,
// as after a release (a lock set's ticket claims it itself). What one
// break ends, by what it names:
//
//   - a lock: its holder (DecideBreak);
//   - a read/write lock NAME: whoever holds it, its writer or every
//     reader (the two never hold together) (DecideBreak);
//   - its readers, NAME/_read: every reader's share at once, never one
//     reader (DecideBreakReaders). A break of readers is asked for
//     because a writer waits behind them, and a queued writer waits for
//     every reader: ending one of several would serve nobody. (etcd's
//     and Consul's read locks have no per-reader break either: an
//     operator there deletes the readers' keys or sessions.)
//   - a semaphore's slot, NAME/_slot.i: that permit only, an ordinary
//     lock's break on the slot's record; the head of the semaphore's
//     queue, woken by the slot's write, takes it at once. The semaphore's
//     own record holds no lease, and is not broken (the shell refuses).
//   - a lock set's member: the whole set, every member's lease in one
//     write (DecideSetBreak), since the set's one ownership is lost with
//     any member (the client ends the set when it learns) and the other
//     members would otherwise stay held, serving nobody, until the set's
//     next renewal or their TTL.

// DecideBreak ends rec's live lease now, whoever holds it: its writer,
// or, when only readers hold, every reader. In the same write the head
// waiter gets the lease, as after a release. It returns every lease it
// ended (none, and no record, when the resource was already free).
func DecideBreak(rec *Record, set Settings, now int64, lim Limits, taken []RequestKey) (LeaseDecision, []Holder) {
	return decideBreak(rec, set, now, lim, taken, true)
}

// DecideBreakReaders ends every reader's lease of the read/write lock rec
// now, in one write, and leaves a writer alone (a writer and readers never
// hold together, so with a writer it ends nothing). The queue's head —
// typically the writer the readers kept out — is handed the lock in the
// same write. It returns the readers it ended.
func DecideBreakReaders(rec *Record, set Settings, now int64, lim Limits, taken []RequestKey) (LeaseDecision, []Holder) {
	return decideBreak(rec, set, now, lim, taken, false)
}

func decideBreak(rec *Record, set Settings, now int64, lim Limits, taken []RequestKey, writer bool) (LeaseDecision, []Holder) {
	next, changed := Normalize(rec, set, now, lim)
	if (!writer || next.Holder == nil) && len(next.Readers) == 0 {
		if !changed {
			return LeaseDecision{}, nil
		}
		return LeaseDecision{Record: next}, nil
	}
	var ended []Holder
	if h := next.Holder; h != nil {
		ended = append(ended, *h)
		endHolder(next, grant.StateExpired, now)
		next.Ended[len(next.Ended)-1].Broken = true
	}
	for len(next.Readers) > 0 {
		ended = append(ended, next.Readers[0])
		removeReader(next, 0, grant.StateExpired, now)
		next.Ended[len(next.Ended)-1].Broken = true
	}
	next.FreeAtMs = max(next.FreeAtMs, now)
	return LeaseDecision{Record: next, Entries: handOff(next, wire.RecordName(ended[0].Grant.Resource), set, now, lim, taken)}, ended
}

// SetOf reports whether rec's live holder at now is a lock set's member,
// and if so the set: its members (sorted), its owner and its request ID
// (the one the set was acquired under; each member's is
// wire.MemberRequestID of it). member is the resource rec is the record
// of.
func SetOf(rec *Record, member string, set Settings, now int64, lim Limits) (members []string, owner, requestID string, ok bool) {
	if rec == nil {
		return nil, "", "", false
	}
	next, _ := Normalize(rec, set, now, lim)
	h := next.Holder
	if h == nil || len(h.Members) == 0 {
		return nil, "", "", false
	}
	i := slices.Index(h.Members, member)
	if i < 0 {
		return nil, "", "", false
	}
	id, found := cutMemberID(h.Grant.RequestID, i)
	if !found {
		return nil, "", "", false
	}
	return h.Members, h.Grant.Owner, id, true
}

func cutMemberID(memberID string, i int) (string, bool) {
	prefix := wire.MemberRequestID("", i)
	if len(memberID) <= len(prefix) || memberID[:len(prefix)] != prefix {
		return "", false
	}
	return memberID[len(prefix):], true
}

// DecideSetBreak ends every member's lease of owner's lock set acquired
// under requestID (members sorted, recs[i] member i's record, nil when
// absent), in one write: each member as DecideBreak ends a lock, each
// queue's plain head handed its member in the same write. A member whose
// lease of the set has already ended (released, expired) is left as it
// is. It fails, writing nothing, unless member named still holds the
// set's lease: the set the caller saw is over (released, expired, broken
// already), and what holds named now is another decision's business.
// ended[i] is member i's ended holder (nil where none was ended).
func DecideSetBreak(recs []*Record, members []string, named int, set Settings, owner, requestID string, now int64, lim Limits, taken []RequestKey) (SetLeaseDecision, []*Holder, error) {
	out := SetLeaseDecision{Records: make([]*Record, len(recs))}
	ended := make([]*Holder, len(recs))
	taken = slices.Clone(taken)
	for i, rec := range recs {
		next, _ := Normalize(recordOr(rec), set, now, lim)
		h := next.Holder
		if h == nil || h.Grant.Owner != owner || h.Grant.RequestID != wire.MemberRequestID(requestID, i) {
			if i == named {
				return SetLeaseDecision{}, nil, fmt.Errorf("%w: %s no longer holds lock set member %s", wire.ErrNotHolder, owner, members[i])
			}
			continue
		}
		d, e := DecideBreak(recordOr(rec), set, now, lim, taken)
		out.Records[i], ended[i] = d.Record, &e[0]
		out.Entries = append(out.Entries, d.Entries...)
		for _, p := range d.Entries {
			taken = append(taken, p.Key) // one request, one entry: never handed twice in one write
		}
	}
	return out, ended, nil
}
