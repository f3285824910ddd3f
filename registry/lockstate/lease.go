package lockstate

import (
	"fmt"
	"slices"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// LeaseDecision is the outcome of a renew, release, break or wait
// cancellation: the writes it asks for.
type LeaseDecision struct {
	Record  *Record    // the resource's new record; nil: nothing to write
	Entries []EntryPut // request entries to create (a handoff's grant)
	Holder  Holder     // renew: the renewed holder
}

// DecideRenew extends owner's live lease to now + its TTL. Expiry is judged
// only here, by the registry clock: a lease with expiresAt <= now is over.
func DecideRenew(rec *Record, set Settings, owner, lease string, now int64, lim Limits) (LeaseDecision, error) {
	if lim.IssuerEpoch < set.RevokedBelowEpoch {
		return LeaseDecision{}, fmt.Errorf("%w: this registry's epoch %d is below %d", wire.ErrEpochRevoked, lim.IssuerEpoch, set.RevokedBelowEpoch)
	}
	next, _ := Normalize(rec, set, now, lim)
	if h := next.Holder; h != nil && h.Grant.Lease == lease {
		if h.Grant.Owner != owner {
			return LeaseDecision{}, fmt.Errorf("%w: lease %s belongs to another owner", wire.ErrNotHolder, lease)
		}
		// Never shorten: another replica's clock may lag a little.
		h.ExpiresAtMs = max(h.ExpiresAtMs, now+int64(h.Grant.TTLMs))
		return LeaseDecision{Record: next, Holder: *h}, nil
	}
	if i := readerIndex(next, lease); i >= 0 {
		h := &next.Readers[i]
		if h.Grant.Owner != owner {
			return LeaseDecision{}, fmt.Errorf("%w: lease %s belongs to another owner", wire.ErrNotHolder, lease)
		}
		h.ExpiresAtMs = max(h.ExpiresAtMs, now+int64(h.Grant.TTLMs)) // its own lease only
		return LeaseDecision{Record: next, Holder: *h}, nil
	}
	return LeaseDecision{}, endedError(next, owner, lease)
}

// DecideRelease ends owner's live lease now. A release frees the resource
// at once: lock-delay follows only an expiry, because after a release the
// owner itself said it stopped. Releasing an already released lease again
// is a no-op (the retry of a release whose response was lost).
//
// If waiters are queued, the same transaction grants the lease to the head
// waiter (handOff), unless taken lists its request ID as having an entry
// already (then the head claims it itself, or is skipped). taken is the
// request keys the caller knows to have an entry; a key not listed counts
// as absent, and the write's compare of its absence catches a wrong guess.
func DecideRelease(rec *Record, set Settings, owner, lease string, now int64, lim Limits, taken []RequestKey) (LeaseDecision, error) {
	next, _ := Normalize(rec, set, now, lim)
	if h := next.Holder; h != nil && h.Grant.Lease == lease {
		if h.Grant.Owner != owner {
			return LeaseDecision{}, fmt.Errorf("%w: lease %s belongs to another owner", wire.ErrNotHolder, lease)
		}
		resource := h.Grant.Resource
		endHolder(next, grant.StateReleased, now)
		next.FreeAtMs = max(next.FreeAtMs, now)
		return LeaseDecision{Record: next, Entries: handOff(next, resource, set, now, lim, taken)}, nil
	}
	if i := readerIndex(next, lease); i >= 0 {
		h := next.Readers[i]
		if h.Grant.Owner != owner {
			return LeaseDecision{}, fmt.Errorf("%w: lease %s belongs to another owner", wire.ErrNotHolder, lease)
		}
		removeReader(next, i, grant.StateReleased, now)
		next.FreeAtMs = max(next.FreeAtMs, now)
		return LeaseDecision{Record: next, Entries: handOff(next, wire.RecordName(h.Grant.Resource), set, now, lim, taken)}, nil
	}
	if e, ok := findEnded(next, lease); ok && e.Owner == owner && e.State == grant.StateReleased {
		return LeaseDecision{}, nil
	}
	return LeaseDecision{}, endedError(next, owner, lease)
}

// handOff grants a resource just freed by a release to the head of its
// queue in the same write, so the next owner holds it without a second
// round trip: the head writer once nobody holds, or the run of readers
// at the head while no writer holds (each as far as it may enter,
// rwlock.go). The head's deadline is still ahead (Normalize pruned the
// rest); if its request ID is taken, or this registry may not issue, the
// head claims the lease itself as after an expiry. It returns the new
// entries to write, one per ticket handed its lease. resource is the
// record's name.
func handOff(next *Record, resource string, set Settings, now int64, lim Limits, taken []RequestKey) []EntryPut {
	var puts []EntryPut
	for len(next.Waiters) > 0 && lim.IssuerEpoch >= set.RevokedBelowEpoch {
		head := next.Waiters[0]
		may := writerMayEnter(next, 0, now)
		if head.Read {
			may = readerMayEnter(next, 0, now)
		}
		// A lock set's ticket is never handed one member alone: the set's
		// own acquire takes every member at once (DecideSetAcquire).
		if !may || head.TTLMs == 0 || len(head.Members) > 0 || now >= head.pollUntil() || slices.Contains(taken, RequestKey{Owner: head.Owner, RequestID: head.RequestID}) {
			return puts // nobody is listening, or its request has an answer: it claims the lease itself
		}
		trial := next.Clone()
		_, put, err := grantTicket(trial, resource, set, head, 0, now, lim)
		if err != nil {
			return puts
		}
		*next = *trial
		puts = append(puts, put)
		if !head.Read {
			return puts // a writer holds alone
		}
	}
	return puts
}

// DecideCancelWait withdraws the waiter key, whose wait ends at
// deadlineMs, from the queue. A head waiter leaving a free resource
// restarts the next head's claim window. A ticket whose deadline a later
// call of the same request moved past deadlineMs is that call's and stays.
//
// If a release already handed key the lease, the lease stays key's: a
// retry of the request ID gets it, and otherwise it expires at its TTL
// like any crashed holder's. Releasing it on would release a grant that
// another call of the same request (the client's retry after a timeout)
// may already have returned — two holders at once, which the chaos
// suite's history checker caught.
func DecideCancelWait(rec *Record, set Settings, key RequestKey, deadlineMs, now int64, lim Limits) LeaseDecision {
	next, changed := Normalize(rec, set, now, lim)
	if i := waiterIndex(next, key); i >= 0 && next.Waiters[i].pollUntil() <= deadlineMs {
		next.Waiters = append(next.Waiters[:i:i], next.Waiters[i+1:]...)
		if i == 0 && !occupied(next) {
			next.FreeAtMs = max(next.FreeAtMs, now)
		}
		changed = true
	}
	if !changed {
		return LeaseDecision{}
	}
	return LeaseDecision{Record: next}
}

// endedError says how a lease that is not the live holder ended.
func endedError(rec *Record, owner, lease string) error {
	e, ok := findEnded(rec, lease)
	if !ok || e.Owner != owner {
		return fmt.Errorf("%w: lease %s is not held by %s", wire.ErrNotHolder, lease, owner)
	}
	switch {
	case e.Broken:
		return fmt.Errorf("%w: lease %s was broken by an operator at %s", wire.ErrLeaseBroken, lease, fromMs(e.AtMs).Format(grant.TimeLayout))
	case e.State == grant.StateExpired:
		return fmt.Errorf("%w: lease %s expired at %s", wire.ErrLeaseExpired, lease, fromMs(e.AtMs).Format(grant.TimeLayout))
	case e.State == grant.StateRevoked:
		return fmt.Errorf("%w: lease %s was revoked", wire.ErrEpochRevoked, lease)
	}
	return fmt.Errorf("%w: lease %s was released", wire.ErrNotHolder, lease)
}
