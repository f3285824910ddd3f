package registry

import (
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/assert"
	"github.com/fencegate/fencegate/wire"
)

// acquireInput is a validated acquire.
type acquireInput struct {
	owner      string
	req        wire.AcquireRequest
	ttlMs      uint64 // effective TTL, inside [TTLMsMin, TTLMsMax]
	wait       bool
	deadlineMs int64 // when wait: the registry instant the wait ends
	arrivedMs  int64 // the registry instant the acquire arrived (StartAcquire)
}

func (in acquireInput) key() RequestKey {
	return RequestKey{Owner: in.owner, RequestID: in.req.RequestID}
}

// ticket is the acquire as a queue entry, parameters included, seen now.
func (in acquireInput) ticket(digest string, now int64, cfg Config) Waiter {
	return Waiter{
		Owner: in.owner, RequestID: in.req.RequestID,
		DeadlineMs: in.deadlineMs + int64(cfg.WaiterGraceMs), PollUntilMs: in.deadlineMs, JoinedMs: now,
		OperationRoot:  grant.OperationRoot(in.req.Resource, in.req.OperationID).String(),
		OperationClass: in.req.OperationClass, TTLMs: in.ttlMs, ParamsDigest: digest, SeenMs: now,
	}
}

// pollUntil is when w's acquire stops listening.
func (w Waiter) pollUntil() int64 {
	if w.PollUntilMs != 0 {
		return w.PollUntilMs
	}
	return w.DeadlineMs
}

// acquireOutcome is what an acquire decision asks the shell to do.
type acquireOutcome int

const (
	// outGranted: commit the record and the new request entry; the commit's
	// revision is the grant's BackendRevision.
	outGranted acquireOutcome = iota + 1
	// outExisting: the request already has a grant; answer from its entry.
	outExisting
	// outQueued: the caller waits in the queue; commit the record first
	// when it is non-nil (joined the queue, or cleaned it).
	outQueued
	// outPurge: the request's old entry is past retention; delete it (its
	// revision must not become the new grant's), then decide again.
	outPurge
	// outHanded: the record shows the caller holds the lease (a release
	// handed it over) or held it until it expired, but the snapshot lacks
	// its entry; read again.
	outHanded
)

type acquireDecision struct {
	outcome acquireOutcome
	record  *Record // nil: no record write
	entries []entryPut
	body    GrantBody // outGranted
}

// validateAcquire checks an acquire's fields and returns its effective TTL.
func validateAcquire(owner string, req wire.AcquireRequest, cfg Config) (uint64, error) {
	for _, c := range []struct {
		field string
		err   error
	}{
		{"owner", grant.ValidateOwner(owner)},
		{"resource", grant.ValidateResource(req.Resource)},
		{"operationId", grant.ValidateOperationID(req.OperationID)},
		{"operationClass", grant.ValidateOperationClass(req.OperationClass)},
		{"requestId", grant.ValidateToken(req.RequestID)},
	} {
		if c.err != nil {
			return 0, fmt.Errorf("%w: %s: %v", wire.ErrInvalid, c.field, c.err)
		}
	}
	ttl := req.TTLMs
	if ttl == 0 {
		ttl = cfg.TTLMsDefault
	}
	if ttl < cfg.TTLMsMin || ttl > cfg.TTLMsMax {
		return 0, fmt.Errorf("%w: ttlMs %d outside [%d, %d]", wire.ErrTTLOutOfRange, ttl, cfg.TTLMsMin, cfg.TTLMsMax)
	}
	return ttl, nil
}

// decideAcquire decides an acquire against rec, the request's own entry
// (nil when absent) and the settings, at now. The lease is granted when the
// resource has no live holder, lock-delay has passed, and the caller is the
// head of the queue (or the queue is empty); the fence is the highest of
// the highest issued fence, the floor and the start of the fence range,
// plus one (nextFence).
func decideAcquire(rec *Record, own *RequestEntry, set Settings, in acquireInput, now int64, cfg Config) (acquireDecision, error) {
	digest := paramsDigest(in.req.Resource, in.req.OperationID, in.req.OperationClass, in.ttlMs)
	if own != nil {
		if !retained(rec, own, now, cfg) {
			return acquireDecision{outcome: outPurge}, nil
		}
		if own.ParamsDigest != digest {
			return acquireDecision{}, fmt.Errorf("%w: request %s was issued for other parameters", wire.ErrRequestMismatch, in.req.RequestID)
		}
		return acquireDecision{outcome: outExisting}, nil
	}
	if cfg.IssuerEpoch < set.RevokedBelowEpoch {
		return acquireDecision{}, fmt.Errorf("%w: this registry's epoch %d is below %d", wire.ErrEpochRevoked, cfg.IssuerEpoch, set.RevokedBelowEpoch)
	}
	next, changed := normalize(rec, set, now, cfg)
	if h := rec.Holder; h != nil && h.Grant.Owner == in.owner && h.Grant.RequestID == in.req.RequestID {
		// The caller's own lease, live or expired just now: its entry
		// exists though the snapshot (a cached one assumes entries absent)
		// does not show it. Deciding on without it would queue a request
		// that has an answer (a ghost waiter) in the same write that ends
		// its lease.
		return acquireDecision{outcome: outHanded}, nil
	}
	idx := waiterIndex(next, in.key())
	if idx != 0 && skipVanishedWaiters(next, in.key(), now, cfg) {
		changed = true
		idx = waiterIndex(next, in.key())
	}
	free := next.Holder == nil && now >= next.FreeAtMs
	if free && (idx == 0 || idx < 0 && len(next.Waiters) == 0) {
		body, put, err := grantLease(next, in.req.Resource, set, in.ticket(digest, now, cfg), idx, now, cfg)
		if err != nil {
			return acquireDecision{}, err
		}
		return acquireDecision{outcome: outGranted, record: next, entries: []entryPut{put}, body: body}, nil
	}
	if !in.wait || now >= in.deadlineMs {
		return acquireDecision{}, busyError(next, in, now)
	}
	switch {
	case idx < 0:
		if len(next.Waiters) >= cfg.WaitersPerResourceMax {
			return acquireDecision{}, fmt.Errorf("%w: %s has %d waiters, limit %d", wire.ErrWaitersFull, in.req.Resource, len(next.Waiters), cfg.WaitersPerResourceMax)
		}
		next.Waiters = append(next.Waiters, in.ticket(digest, now, cfg))
		changed = true
	case next.Waiters[idx].pollUntil() < in.deadlineMs:
		// A retry of the same request moves its deadline (later only, so
		// two calls of one request never undo each other), not its place.
		w := &next.Waiters[idx]
		w.DeadlineMs, w.PollUntilMs = max(w.DeadlineMs, in.deadlineMs+int64(cfg.WaiterGraceMs)), in.deadlineMs
		w.SeenMs = now
		changed = true
	case stampDue(next, idx, now, cfg):
		next.Waiters[idx].SeenMs = now // alive, while the head is slow to claim
		changed = true
	}
	if !changed {
		return acquireDecision{outcome: outQueued}, nil
	}
	return acquireDecision{outcome: outQueued, record: next}, nil
}

// grantLease makes the ticket t the holder of next (a private copy) with
// the next fence of set's range (nextFence), and returns the grant and the
// ticket's new entry (whose absence the write compares): the only write of
// that entry. idx is t's queue position, or -1.
func grantLease(next *Record, resource string, set Settings, t Waiter, idx int, now int64, cfg Config) (GrantBody, entryPut, error) {
	above := max(next.HighestFence, next.Floor)
	fence, err := nextFence(resource, next, set)
	if err != nil {
		return GrantBody{}, entryPut{}, err
	}
	assertFenceAbove(resource, fence, above)
	body := GrantBody{
		Resource:         resource,
		Owner:            t.Owner,
		RequestID:        t.RequestID,
		Lease:            leaseID(resource, t.Owner, t.RequestID, fence, now),
		OperationRoot:    t.OperationRoot,
		OperationClass:   t.OperationClass,
		FenceToken:       fence,
		PolicyGeneration: next.PolicyGeneration,
		IssuerEpoch:      cfg.IssuerEpoch,
		TTLMs:            t.TTLMs,
		IssuedAtMs:       now,
		HeldUntilMs:      heldUntilMs(now, t.TTLMs, cfg),
	}
	next.Holder = &Holder{Grant: body, ParamsDigest: t.ParamsDigest, ExpiresAtMs: now + int64(t.TTLMs)}
	next.HighestFence = fence
	assertGranted(resource, next, above)
	if idx >= 0 {
		next.Waiters = append(next.Waiters[:idx:idx], next.Waiters[idx+1:]...)
	}
	return body, entryPut{
		key:   RequestKey{Owner: t.Owner, RequestID: t.RequestID},
		entry: RequestEntry{Grant: body, ParamsDigest: t.ParamsDigest, State: grant.StateHeld},
	}, nil
}

// The fence invariant, asserted on both sides of the record's change: a
// grant's fence exceeds max(highestFence, floor) of the record it is
// allocated from (so no fence is issued twice, and none at or below a
// floor an operator raised), and the record written holds it as its
// highestFence and its holder's. A failure is a programmer error in this
// file, so it panics (internal/assert).

// assertFenceAbove checks the fence allocated from a record whose
// max(highestFence, floor) was above.
func assertFenceAbove(resource string, fence, above uint64) {
	assert.That(fence > above, "registry: fence %d for %s is not above max(highestFence, floor) %d", fence, resource, above)
}

// assertGranted checks the record a grant leaves behind, next, against
// the max(highestFence, floor) it was allocated from.
func assertGranted(resource string, next *Record, above uint64) {
	fence := next.Holder.Grant.FenceToken
	assertFenceAbove(resource, fence, above)
	assert.That(next.HighestFence == fence && next.HighestFence > next.Floor,
		"registry: %s granted fence %d but records highestFence %d, floor %d", resource, fence, next.HighestFence, next.Floor)
}

// busyError says why the lease cannot be granted now, and what the caller
// needs next: who holds it, since when, for how long, how many wait.
func busyError(next *Record, in acquireInput, now int64) error {
	sentinel := wire.ErrBusy
	if in.wait {
		sentinel = wire.ErrWaitTimeout
	}
	v := lockView(in.req.Resource, next, now, 0)
	return &wire.BusyError{Sentinel: sentinel, BusyDetail: wire.BusyDetail{
		Resource: in.req.Resource, Holder: v.Holder, FreeAt: v.FreeAt, Waiters: len(v.Waiters), ReadAt: v.ReadAt,
	}}
}
