package registry

import (
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// leaseDecision is the outcome of a renew, release or wait cancellation.
type leaseDecision struct {
	record  *Record // nil: nothing to write
	entries []entryPut
	holder  Holder // renew: the renewed holder
}

// decideRenew extends owner's live lease to now + its TTL. Expiry is judged
// only here, by the registry clock: a lease with expiresAt <= now is over.
func decideRenew(rec *Record, set Settings, owner, lease string, now int64, cfg Config) (leaseDecision, error) {
	if cfg.IssuerEpoch < set.RevokedBelowEpoch {
		return leaseDecision{}, fmt.Errorf("%w: this registry's epoch %d is below %d", wire.ErrEpochRevoked, cfg.IssuerEpoch, set.RevokedBelowEpoch)
	}
	next, _ := normalize(rec, set, now, cfg)
	if h := next.Holder; h != nil && h.Grant.Lease == lease {
		if h.Grant.Owner != owner {
			return leaseDecision{}, fmt.Errorf("%w: lease %s belongs to another owner", wire.ErrNotHolder, lease)
		}
		// Never shorten: another replica's clock may lag a little.
		h.ExpiresAtMs = max(h.ExpiresAtMs, now+int64(h.Grant.TTLMs))
		return leaseDecision{record: next, holder: *h}, nil
	}
	return leaseDecision{}, endedError(next, owner, lease)
}

// decideRelease ends owner's live lease now. A release frees the resource
// at once: lock-delay follows only an expiry, because after a release the
// owner itself said it stopped. Releasing an already released lease again
// is a no-op (the retry of a release whose response was lost).
//
// If waiters are queued, the same transaction grants the lease to the head
// waiter (handOff), unless taken reports that its request ID already has
// an entry (then the head claims it itself, or is skipped).
func decideRelease(rec *Record, set Settings, owner, lease string, now int64, cfg Config, taken func(RequestKey) bool) (leaseDecision, error) {
	next, _ := normalize(rec, set, now, cfg)
	if h := next.Holder; h != nil && h.Grant.Lease == lease {
		if h.Grant.Owner != owner {
			return leaseDecision{}, fmt.Errorf("%w: lease %s belongs to another owner", wire.ErrNotHolder, lease)
		}
		resource := h.Grant.Resource
		endHolder(next, grant.StateReleased, now)
		next.FreeAtMs = max(next.FreeAtMs, now)
		return leaseDecision{record: next, entries: handOff(next, resource, set, now, cfg, taken)}, nil
	}
	if e, ok := findEnded(next, lease); ok && e.Owner == owner && e.State == grant.StateReleased {
		return leaseDecision{}, nil
	}
	return leaseDecision{}, endedError(next, owner, lease)
}

// handOff grants a resource just freed by a release to the head of its
// queue in the same write, so the next owner holds it without a second
// round trip. The head's deadline is still ahead (normalize pruned the
// rest); if its request ID is taken, or this registry may not issue, the
// head claims the lease itself as after an expiry. It returns the head's
// new entry to write, if it was handed the lease.
func handOff(next *Record, resource string, set Settings, now int64, cfg Config, taken func(RequestKey) bool) []entryPut {
	if next.Holder != nil || len(next.Waiters) == 0 || now < next.FreeAtMs || cfg.IssuerEpoch < set.RevokedBelowEpoch {
		return nil
	}
	head := next.Waiters[0]
	if head.TTLMs == 0 || now >= head.pollUntil() || taken(RequestKey{Owner: head.Owner, RequestID: head.RequestID}) {
		return nil // nobody is listening, or its request has an answer: it claims the lease itself
	}
	trial := next.clone()
	_, put, err := grantLease(trial, resource, set, head, 0, now, cfg)
	if err != nil {
		return nil
	}
	*next = *trial
	return []entryPut{put}
}

// decideBreak ends rec's live lease now, whoever holds it, as an operator
// asked (fencegate break): the ended lease is EXPIRED to every status
// query, marked broken, and the resource is free at once — no lock-delay:
// the next grant's fence is higher, so the old holder's late writes are
// refused at every gate once the next holder has written, whatever its
// clock says. In the same write the head waiter gets the lease, as after
// a release. It returns the holder it ended (nil, and no record, when the
// resource was already free).
func decideBreak(rec *Record, set Settings, now int64, cfg Config, taken func(RequestKey) bool) (leaseDecision, *Holder) {
	next, changed := normalize(rec, set, now, cfg)
	h := next.Holder
	if h == nil {
		if !changed {
			return leaseDecision{}, nil
		}
		return leaseDecision{record: next}, nil
	}
	ended := *h
	endHolder(next, grant.StateExpired, now)
	next.Ended[len(next.Ended)-1].Broken = true
	next.FreeAtMs = max(next.FreeAtMs, now)
	return leaseDecision{record: next, entries: handOff(next, ended.Grant.Resource, set, now, cfg, taken)}, &ended
}

// decideCancelWait withdraws the waiter key, whose wait ends at
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
func decideCancelWait(rec *Record, set Settings, key RequestKey, deadlineMs, now int64, cfg Config) leaseDecision {
	next, changed := normalize(rec, set, now, cfg)
	if i := waiterIndex(next, key); i >= 0 && next.Waiters[i].pollUntil() <= deadlineMs {
		next.Waiters = append(next.Waiters[:i:i], next.Waiters[i+1:]...)
		if i == 0 && next.Holder == nil {
			next.FreeAtMs = max(next.FreeAtMs, now)
		}
		changed = true
	}
	if !changed {
		return leaseDecision{}
	}
	return leaseDecision{record: next}
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
