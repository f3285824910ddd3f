package lockstate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// A lock set {m0 … mk-1} (wire.LockSetRequest, members sorted) is taken
// all at once or not at all: DecideSetAcquire decides on every member's
// record at once, and the shell commits what it returns in one store
// transaction over every member. The rules (model/lockset.pml checks
// them, and the registry's tests on a real store):
//
//   - A set that is granted takes every member in one write, each an
//     ordinary grant on its own record, its own next fence, under the
//     member's request ID wire.MemberRequestID(id, i), with one TTL, one
//     issue instant, one operation ID and class.
//   - A set that cannot have all waits in every member's queue, joined in
//     one write, holding nothing. Its ticket is granted — every member at
//     once, by the set's own acquire — when it is the head of every
//     member's queue and every member is free. A release never hands a
//     member alone to a set's ticket (handOff).
//   - Tickets are all or none too: a set whose ticket is missing from
//     some member's queue (dropped as stale, pruned at its deadline)
//     while present in others withdraws every ticket and joins every
//     queue again at the tail, in one write. Every queue's order then
//     follows one global commit order, so no cycle of sets each waiting
//     for the next can form, whatever order callers name members in.
//   - A set's ticket at the head of a free member whose other members are
//     busy is blocked, not vanished: it is dropped only when unseen for
//     2 × HandoffClaimMs (skipVanishedWaiters), and the waiting set
//     stamps itself where due (setStampDue).
//   - Strict FIFO: a plain acquire queues behind a set's ticket even on a
//     free resource.

// SetInput is a validated lock-set acquire, its wait fixed by the
// registry clock (NewSetInput).
type SetInput struct {
	Owner      string
	Req        wire.LockSetRequest
	TTLMs      uint64 // effective TTL, inside [TTLMsMin, TTLMsMax]
	Wait       bool
	DeadlineMs int64 // when Wait: the registry instant the wait ends
	ArrivedMs  int64
}

// NewSetInput validates owner's lock-set acquire req, which arrived at
// the registry instant arrivedMs, and fixes the end of its wait: at most
// WaitMsMax after its arrival.
func NewSetInput(owner string, req wire.LockSetRequest, arrivedMs int64, lim Limits) (SetInput, error) {
	for _, c := range []struct {
		field string
		err   error
	}{
		{"owner", grant.ValidateOwner(owner)},
		{"operationId", grant.ValidateOperationID(req.OperationID)},
		{"operationClass", grant.ValidateOperationClass(req.OperationClass)},
	} {
		if c.err != nil {
			return SetInput{}, fmt.Errorf("%w: %s: %v", wire.ErrInvalid, c.field, c.err)
		}
	}
	if err := wire.ValidateLockSet(req.Members); err != nil {
		return SetInput{}, err
	}
	if err := wire.ValidateSetRequestID(req.RequestID); err != nil {
		return SetInput{}, err
	}
	ttl := req.TTLMs
	if ttl == 0 {
		ttl = lim.TTLMsDefault
	}
	if ttl < lim.TTLMsMin || ttl > lim.TTLMsMax {
		return SetInput{}, fmt.Errorf("%w: ttlMs %d outside [%d, %d]", wire.ErrTTLOutOfRange, ttl, lim.TTLMsMin, lim.TTLMsMax)
	}
	in := SetInput{Owner: owner, Req: req, TTLMs: ttl, Wait: req.WaitMs > 0, ArrivedMs: arrivedMs}
	in.Req.Members = append([]string(nil), req.Members...) // never aliases the caller's
	if in.Wait {
		in.DeadlineMs = arrivedMs + int64(min(req.WaitMs, lim.WaitMsMax))
	}
	return in, nil
}

// MemberKey is member i's request key: the owner and the member's
// derived request ID (wire.MemberRequestID). Its entry is member i's
// grant; its ticket stands in member i's queue.
func (in SetInput) MemberKey(i int) RequestKey {
	return RequestKey{Owner: in.Owner, RequestID: wire.MemberRequestID(in.Req.RequestID, i)}
}

// Keys are every member's request key, in member order.
func (in SetInput) Keys() []RequestKey {
	out := make([]RequestKey, len(in.Req.Members))
	for i := range out {
		out[i] = in.MemberKey(i)
	}
	return out
}

// digest is member i's params digest: the member, the whole set, the
// operation ID and class and the TTL, so a retry of the set's request ID
// naming anything else is ErrRequestMismatch. Framed by lengths, and
// tagged so it never equals a plain acquire's.
func (in SetInput) digest(i int) string {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("lockset")
	field(in.Req.Members[i])
	binary.BigEndian.PutUint64(n[:], uint64(len(in.Req.Members)))
	h.Write(n[:])
	for _, m := range in.Req.Members {
		field(m)
	}
	field(in.Req.OperationID)
	field(in.Req.OperationClass)
	binary.BigEndian.PutUint64(n[:], in.TTLMs)
	h.Write(n[:])
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// grantTicket is member i's acquire as the ticket grantLease grants: the
// member's request ID, operation root and digest, the set's TTL.
func (in SetInput) grantTicket(i int, now int64, lim Limits) Waiter {
	w := Waiter{
		Owner: in.Owner, RequestID: in.MemberKey(i).RequestID,
		DeadlineMs: in.DeadlineMs + int64(lim.WaiterGraceMs), PollUntilMs: in.DeadlineMs, JoinedMs: now,
		OperationRoot:  grant.OperationRoot(in.Req.Members[i], in.Req.OperationID).String(),
		OperationClass: in.Req.OperationClass, TTLMs: in.TTLMs, ParamsDigest: in.digest(i), SeenMs: now,
		Members: in.Req.Members,
	}
	return w
}

// queueTicket is member i's ticket as it stands in the queue: TTLMs 0
// (no registry hands it the member alone), the TTL in SetTTLMs.
func (in SetInput) queueTicket(i int, now int64, lim Limits) Waiter {
	w := in.grantTicket(i, now, lim)
	w.TTLMs, w.SetTTLMs = 0, in.TTLMs
	return w
}

// SetDecision is a lock-set acquire's decision: what to do, and the
// writes it asks for, all in one transaction.
type SetDecision struct {
	// Outcome: AcquireGranted (commit every record and entry),
	// AcquireExisting (answer from every member's entry), AcquireQueued
	// (commit the records that are not nil), AcquirePurge (delete every
	// member's entry that exists, then decide again), AcquireHanded
	// (some member's record shows the set holds it but the snapshot
	// lacks its entry: read again).
	Outcome AcquireOutcome
	// Records are the members' new records, in member order; nil: no
	// write of that member.
	Records []*Record
	Entries []EntryPut  // AcquireGranted: every member's new entry
	Bodies  []GrantBody // AcquireGranted: every member's grant, in member order
	// Rejoined: the set's ticket was missing from some member's queue,
	// so every ticket was withdrawn and joined again at the tail.
	Rejoined bool
}

// DecideSetAcquire decides the lock-set acquire in against every
// member's record (recs[i], nil when absent) and entry (own[i], nil when
// absent), read at one revision, and the settings, at now. See the
// rules at the top of this file. It never grants part of a set: either
// every member is granted (AcquireGranted, one record and one entry per
// member) or none is.
func DecideSetAcquire(recs []*Record, own []*RequestEntry, set Settings, in SetInput, now int64, lim Limits) (SetDecision, error) {
	members := in.Req.Members
	n := len(members)
	if len(recs) != n || len(own) != n {
		return SetDecision{}, fmt.Errorf("lockstate: set of %d members decided on %d records and %d entries", n, len(recs), len(own))
	}
	if dec, err, done := decideSetExisting(recs, own, in, now, lim); done {
		return dec, err
	}
	for i, rec := range recs {
		if rec != nil && rec.Permits > 0 {
			return SetDecision{}, fmt.Errorf("%w: %s is a semaphore of %d permits, not a plain lock", wire.ErrPermitsMismatch, members[i], rec.Permits)
		}
	}
	if lim.IssuerEpoch < set.RevokedBelowEpoch {
		return SetDecision{}, fmt.Errorf("%w: this registry's epoch %d is below %d", wire.ErrEpochRevoked, lim.IssuerEpoch, set.RevokedBelowEpoch)
	}
	next := make([]*Record, n)
	changed := make([]bool, n)
	idx := make([]int, n)
	queued := 0
	for i, rec := range recs {
		next[i], changed[i] = Normalize(rec, set, now, lim)
		if h := next[i].Holder; h != nil && h.Grant.Owner == in.Owner && h.Grant.RequestID == in.MemberKey(i).RequestID {
			return SetDecision{Outcome: AcquireHanded}, nil // its entry exists though the snapshot lacks it
		}
		if idx[i] = waiterIndex(next[i], in.MemberKey(i)); idx[i] >= 0 {
			queued++
		}
	}
	rejoined := queued > 0 && queued < n
	if rejoined {
		// All tickets or none: withdraw every one, and join again below.
		for i := range next {
			if idx[i] >= 0 {
				withdraw(next[i], idx[i], now)
				changed[i], idx[i] = true, -1
			}
		}
	}
	for i := range next {
		if idx[i] != 0 && skipVanishedWaiters(next[i], in.MemberKey(i), now, lim) {
			changed[i] = true
			idx[i] = waiterIndex(next[i], in.MemberKey(i))
		}
	}
	if busy := firstBusy(next, idx, now); busy < 0 {
		return grantSet(next, set, in, idx, now, lim)
	} else if !in.Wait || now >= in.DeadlineMs {
		return SetDecision{}, setBusyError(members[busy], next[busy], in.Wait, now)
	}
	for i := range next {
		t := in.queueTicket(i, now, lim)
		switch {
		case idx[i] < 0:
			if len(next[i].Waiters) >= lim.WaitersPerResourceMax {
				return SetDecision{}, fmt.Errorf("%w: %s has %d waiters, limit %d", wire.ErrWaitersFull, members[i], len(next[i].Waiters), lim.WaitersPerResourceMax)
			}
			next[i].Waiters = append(next[i].Waiters, t)
			changed[i] = true
		case next[i].Waiters[idx[i]].pollUntil() < in.DeadlineMs:
			w := &next[i].Waiters[idx[i]]
			w.DeadlineMs, w.PollUntilMs = max(w.DeadlineMs, t.DeadlineMs), in.DeadlineMs
			w.SeenMs = now
			changed[i] = true
		case setStampDue(next[i], idx[i], now, lim):
			next[i].Waiters[idx[i]].SeenMs = now
			changed[i] = true
		}
	}
	out := SetDecision{Outcome: AcquireQueued, Records: make([]*Record, n), Rejoined: rejoined}
	for i := range next {
		if changed[i] {
			out.Records[i] = next[i]
		}
	}
	return out, nil
}

// decideSetExisting answers a set acquire whose request has entries:
// every member's, inside retention and for the same parameters, is
// AcquireExisting; one past retention, or one missing beside others
// (the retention sweep took it), purges them all (the request ID starts
// over); another set's parameters are ErrRequestMismatch. done is false
// when no member has an entry.
func decideSetExisting(recs []*Record, own []*RequestEntry, in SetInput, now int64, lim Limits) (SetDecision, error, bool) {
	found := 0
	for i, e := range own {
		if e == nil {
			continue
		}
		found++
		if !Retained(recordOr(recs[i]), e, now, lim) {
			return SetDecision{Outcome: AcquirePurge}, nil, true
		}
		if e.ParamsDigest != in.digest(i) {
			return SetDecision{}, fmt.Errorf("%w: request %s was issued for other parameters", wire.ErrRequestMismatch, in.Req.RequestID), true
		}
	}
	switch {
	case found == 0:
		return SetDecision{}, nil, false
	case found < len(own):
		return SetDecision{Outcome: AcquirePurge}, nil, true
	}
	return SetDecision{Outcome: AcquireExisting}, nil, true
}

// firstBusy returns the first member (in member order) the set may not
// take now: held (by a writer or a reader), in lock-delay, or with someone ahead of the set's
// ticket (or, without one, anyone queued); -1 when it may take all.
func firstBusy(next []*Record, idx []int, now int64) int {
	for i, rec := range next {
		free := !occupied(rec) && now >= rec.FreeAtMs
		if !free || idx[i] > 0 || idx[i] < 0 && len(rec.Waiters) > 0 {
			return i
		}
	}
	return -1
}

// grantSet grants every member at once: each its own next fence, entry
// and grant, one TTL and issue instant. A member whose fence range is
// used up fails the whole set.
func grantSet(next []*Record, set Settings, in SetInput, idx []int, now int64, lim Limits) (SetDecision, error) {
	out := SetDecision{Outcome: AcquireGranted, Records: next}
	for i, rec := range next {
		body, put, err := grantLease(rec, in.Req.Members[i], set, in.grantTicket(i, now, lim), idx[i], now, lim)
		if err != nil {
			return SetDecision{}, err
		}
		out.Bodies = append(out.Bodies, body)
		out.Entries = append(out.Entries, put)
	}
	return out, nil
}

// withdraw removes the waiter at idx from rec (a private copy); a head
// leaving a free resource restarts the next head's claim window.
func withdraw(rec *Record, idx int, now int64) {
	rec.Waiters = append(rec.Waiters[:idx:idx], rec.Waiters[idx+1:]...)
	if idx == 0 && !occupied(rec) {
		rec.FreeAtMs = max(rec.FreeAtMs, now)
	}
}

// setStampDue reports whether a waiting set's ticket at idx in rec
// should stamp itself alive: behind the head, as a plain waiter's
// (stampDue); at the head of a free resource it cannot claim (another
// member is busy), every SetStampMs, so it never looks stale
// (skipVanishedWaiters).
func setStampDue(rec *Record, idx int, now int64, lim Limits) bool {
	if idx == 0 {
		return !occupied(rec) && now-rec.Waiters[0].SeenMs >= SetStampMs(lim)
	}
	return stampDue(rec, idx, now, lim)
}

// SetStampMs is how often a waiting set must step to keep its ticket
// seen where it is a blocked head: half the claim window, a quarter of
// the stale bound.
func SetStampMs(lim Limits) int64 { return int64(lim.HandoffClaimMs) / 2 }

// setBusyError names the first member the set may not take: who holds
// it, since when, how many wait.
func setBusyError(member string, rec *Record, wait bool, now int64) error {
	sentinel := wire.ErrBusy
	if wait {
		sentinel = wire.ErrWaitTimeout
	}
	v := LockView(member, rec, now, 0)
	return &wire.BusyError{Sentinel: sentinel, BusyDetail: wire.BusyDetail{
		Resource: member, Holder: v.Holder, FreeAt: v.FreeAt, Waiters: len(v.Waiters), ReadAt: v.ReadAt,
	}}
}

func recordOr(rec *Record) *Record {
	if rec == nil {
		return &Record{}
	}
	return rec
}

// SetLeaseDecision is a lock set's renewal, release or cancellation:
// every member's new record (nil: no write of that member), the entries
// of releases' handoffs, and a renewal's holders.
type SetLeaseDecision struct {
	Records []*Record
	Entries []EntryPut
	Holders []Holder // renew: every member's renewed holder
}

// memberError names the member a set's decision failed on.
func memberError(member string, err error) error {
	return fmt.Errorf("lock set member %s: %w", member, err)
}

// DecideSetRenew renews every member's lease (leases[i] on resources[i],
// whose record is recs[i]) to now + its TTL, or none: if any member's
// lease has ended or is not owner's, the error names that member and
// how it ended, and nothing is written (the client ends the whole set).
func DecideSetRenew(recs []*Record, resources []string, set Settings, owner string, leases []string, now int64, lim Limits) (SetLeaseDecision, error) {
	out := SetLeaseDecision{Records: make([]*Record, len(recs)), Holders: make([]Holder, len(recs))}
	for i, rec := range recs {
		d, err := DecideRenew(recordOr(rec), set, owner, leases[i], now, lim)
		if err != nil {
			return SetLeaseDecision{}, memberError(resources[i], err)
		}
		out.Records[i], out.Holders[i] = d.Record, d.Holder
	}
	return out, nil
}

// DecideSetRelease releases every member's lease it can, in one write:
// each member as DecideRelease does (its queue's plain head is handed the
// member in the same write; a set's head claims it itself). A member
// whose lease already ended otherwise (expired, broken, another owner's)
// is left as it is, and failed names the first such member: the others
// are still released, since the caller gave the set up.
func DecideSetRelease(recs []*Record, resources []string, set Settings, owner string, leases []string, now int64, lim Limits, taken []RequestKey) (out SetLeaseDecision, failed error) {
	out.Records = make([]*Record, len(recs))
	for i, rec := range recs {
		d, err := DecideRelease(recordOr(rec), set, owner, leases[i], now, lim, taken)
		if err != nil {
			if failed == nil {
				failed = memberError(resources[i], err)
			}
			continue
		}
		out.Records[i] = d.Record
		out.Entries = append(out.Entries, d.Entries...)
	}
	return out, failed
}

// DecideSetCancel withdraws a waiting set's ticket from every member's
// queue (DecideCancelWait, member by member, in one write): the set gave
// up. A member the set was granted meanwhile stays granted (as for a
// plain wait: a retry of the request gets it).
func DecideSetCancel(recs []*Record, set Settings, in SetInput, now int64, lim Limits) SetLeaseDecision {
	out := SetLeaseDecision{Records: make([]*Record, len(recs))}
	for i, rec := range recs {
		out.Records[i] = DecideCancelWait(recordOr(rec), set, in.MemberKey(i), in.DeadlineMs, now, lim).Record
	}
	return out
}
