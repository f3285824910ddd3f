package lockstate

import (
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/assert"
	"github.com/fencegate/fencegate/wire"
)

// AcquireInput is a validated acquire, its wait fixed by the registry
// clock (NewAcquireInput).
type AcquireInput struct {
	Owner      string // the caller's authenticated identity
	Req        wire.AcquireRequest
	TTLMs      uint64 // effective TTL, inside [TTLMsMin, TTLMsMax]
	Wait       bool   // the caller waits in the queue (Req.WaitMs > 0)
	DeadlineMs int64  // when Wait: the registry instant the wait ends
	ArrivedMs  int64  // the registry instant the acquire arrived
}

// NewAcquireInput validates owner's acquire req (validateAcquire), which
// arrived at the registry instant arrivedMs, and fixes the end of its
// wait: at most WaitMsMax after its arrival.
func NewAcquireInput(owner string, req wire.AcquireRequest, arrivedMs int64, lim Limits) (AcquireInput, error) {
	ttl, err := validateAcquire(owner, req, lim)
	if err != nil {
		return AcquireInput{}, err
	}
	in := AcquireInput{Owner: owner, Req: req, TTLMs: ttl, Wait: req.WaitMs > 0, ArrivedMs: arrivedMs}
	if in.Wait {
		in.DeadlineMs = arrivedMs + int64(min(req.WaitMs, lim.WaitMsMax))
	}
	return in, nil
}

// Key is the request entry's key: the request ID, scoped to its owner.
func (in AcquireInput) Key() RequestKey {
	return RequestKey{Owner: in.Owner, RequestID: in.Req.RequestID}
}

// ticket is the acquire as a queue entry, parameters included, seen now.
func (in AcquireInput) ticket(digest string, now int64, lim Limits) Waiter {
	return Waiter{
		Owner: in.Owner, RequestID: in.Req.RequestID,
		DeadlineMs: in.DeadlineMs + int64(lim.WaiterGraceMs), PollUntilMs: in.DeadlineMs, JoinedMs: now,
		OperationRoot:  grant.OperationRoot(in.grantResource(), in.Req.OperationID).String(),
		OperationClass: in.Req.OperationClass, TTLMs: in.TTLMs, ParamsDigest: digest, SeenMs: now,
		Read: in.Read(),
	}
}

// pollUntil is when w's acquire stops listening.
func (w Waiter) pollUntil() int64 {
	if w.PollUntilMs != 0 {
		return w.PollUntilMs
	}
	return w.DeadlineMs
}

// AcquireOutcome is what an acquire decision asks the shell to do.
type AcquireOutcome int

const (
	// AcquireGranted: commit the record and the new request entry; the
	// commit's revision is the grant's BackendRevision.
	AcquireGranted AcquireOutcome = iota + 1
	// AcquireExisting: the request already has a grant; answer from its
	// entry.
	AcquireExisting
	// AcquireQueued: the caller waits in the queue; commit the record
	// first when it is non-nil (joined the queue, or cleaned it).
	AcquireQueued
	// AcquirePurge: the request's old entry is past retention; delete it
	// (its revision must not become the new grant's), then decide again.
	AcquirePurge
	// AcquireHanded: the record shows the caller holds the lease (a
	// release handed it over) or held it until it expired, but the
	// snapshot lacks its entry; read again.
	AcquireHanded
)

// AcquireDecision is an acquire's decision: what to do, and the writes it
// asks for.
type AcquireDecision struct {
	Outcome AcquireOutcome
	Record  *Record    // the resource's new record; nil: no record write
	Entries []EntryPut // the request entries to create (AcquireGranted)
	Body    GrantBody  // the grant (AcquireGranted)
}

// validateAcquire checks an acquire's fields and returns its effective TTL.
func validateAcquire(owner string, req wire.AcquireRequest, lim Limits) (uint64, error) {
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
	if wire.ReservedRequestID(req.RequestID) {
		return 0, fmt.Errorf("%w: requestId: request IDs beginning %q are reserved for the members of lock sets", wire.ErrInvalid, wire.SetRequestIDPrefix)
	}
	if req.Permits > 0 {
		if err := wire.ValidateSemaphore(req.Resource, req.Permits); err != nil {
			return 0, err
		}
	} else if _, _, slot := wire.SlotOf(req.Resource); slot {
		return 0, fmt.Errorf("%w: resource %s is a semaphore's slot: acquire the semaphore (permits)", wire.ErrInvalid, req.Resource)
	}
	if _, read := wire.ReadOf(req.Resource); read {
		return 0, fmt.Errorf("%w: resource %s is a read/write lock's reader resource: acquire %s with mode %q", wire.ErrInvalid, req.Resource, wire.RecordName(req.Resource), wire.ModeRead)
	}
	if err := wire.ValidateMode(req); err != nil {
		return 0, err
	}
	ttl := req.TTLMs
	if ttl == 0 {
		ttl = lim.TTLMsDefault
	}
	if ttl < lim.TTLMsMin || ttl > lim.TTLMsMax {
		return 0, fmt.Errorf("%w: ttlMs %d outside [%d, %d]", wire.ErrTTLOutOfRange, ttl, lim.TTLMsMin, lim.TTLMsMax)
	}
	return ttl, nil
}

// DecideAcquire decides an acquire against rec, the request's own entry
// (nil when absent) and the settings, at now. The lease is granted when the
// resource has no live holder, lock-delay has passed, and the caller is the
// head of the queue (or the queue is empty); the fence is the highest of
// the highest issued fence, the floor and the start of the fence range,
// plus one (nextFence). A read acquire (wire.ModeRead) is a reader's
// lease, granted by the rules of rwlock.go; a writer also waits for the
// readers holding.
func DecideAcquire(rec *Record, own *RequestEntry, set Settings, in AcquireInput, now int64, lim Limits) (AcquireDecision, error) {
	digest := paramsDigest(in.grantResource(), in.Req.OperationID, in.Req.OperationClass, in.TTLMs)
	if own != nil {
		if !Retained(rec, own, now, lim) {
			return AcquireDecision{Outcome: AcquirePurge}, nil
		}
		if own.ParamsDigest != digest {
			return AcquireDecision{}, fmt.Errorf("%w: request %s was issued for other parameters", wire.ErrRequestMismatch, in.Req.RequestID)
		}
		return AcquireDecision{Outcome: AcquireExisting}, nil
	}
	if rec.Permits > 0 {
		return AcquireDecision{}, fmt.Errorf("%w: %s is a semaphore of %d permits, not a plain lock", wire.ErrPermitsMismatch, in.Req.Resource, rec.Permits)
	}
	if lim.IssuerEpoch < set.RevokedBelowEpoch {
		return AcquireDecision{}, fmt.Errorf("%w: this registry's epoch %d is below %d", wire.ErrEpochRevoked, lim.IssuerEpoch, set.RevokedBelowEpoch)
	}
	next, changed := Normalize(rec, set, now, lim)
	if holdingRequest(rec, in.Key()) {
		// The caller's own lease, live or expired just now: its entry
		// exists though the snapshot (a cached one assumes entries absent)
		// does not show it. Deciding on without it would queue a request
		// that has an answer (a ghost waiter) in the same write that ends
		// its lease.
		return AcquireDecision{Outcome: AcquireHanded}, nil
	}
	idx := waiterIndex(next, in.Key())
	if idx != 0 && skipVanishedWaiters(next, in.Key(), now, lim) {
		changed = true
		idx = waiterIndex(next, in.Key())
	}
	may := writerMayEnter(next, idx, now)
	if in.Read() {
		may = readerMayEnter(next, idx, now)
	}
	if may {
		body, put, err := grantTicket(next, in.Req.Resource, set, in.ticket(digest, now, lim), idx, now, lim)
		if err != nil {
			return AcquireDecision{}, err
		}
		return AcquireDecision{Outcome: AcquireGranted, Record: next, Entries: []EntryPut{put}, Body: body}, nil
	}
	if !in.Wait || now >= in.DeadlineMs {
		return AcquireDecision{}, busyError(next, in, now)
	}
	queued, err := queueOrRefresh(next, idx, in, digest, now, lim)
	if err != nil {
		return AcquireDecision{}, err
	}
	switch {
	case queued:
		changed = true
	case stampDue(next, idx, now, lim):
		next.Waiters[idx].SeenMs = now // alive, while the head is slow to claim
		changed = true
	}
	if !changed {
		return AcquireDecision{Outcome: AcquireQueued}, nil
	}
	return AcquireDecision{Outcome: AcquireQueued, Record: next}, nil
}

// queueOrRefresh puts the request in next's queue (idx < 0: it has no
// ticket yet) or, when its ticket polls until before in.DeadlineMs, moves
// that deadline: a retry of the same request moves its deadline (later
// only, so two calls of one request never undo each other), not its
// place. It reports whether it changed next; a full queue is
// wire.ErrWaitersFull. The exclusive lock's queue and the semaphore's
// share it.
func queueOrRefresh(next *Record, idx int, in AcquireInput, digest string, now int64, lim Limits) (bool, error) {
	switch {
	case idx < 0:
		if len(next.Waiters) >= lim.WaitersPerResourceMax {
			return false, fmt.Errorf("%w: %s has %d waiters, limit %d", wire.ErrWaitersFull, in.Req.Resource, len(next.Waiters), lim.WaitersPerResourceMax)
		}
		next.Waiters = append(next.Waiters, in.ticket(digest, now, lim))
		return true, nil
	case next.Waiters[idx].pollUntil() < in.DeadlineMs:
		w := &next.Waiters[idx]
		w.DeadlineMs, w.PollUntilMs = max(w.DeadlineMs, in.DeadlineMs+int64(lim.WaiterGraceMs)), in.DeadlineMs
		w.SeenMs = now
		return true, nil
	}
	return false, nil
}

// grantLease makes the ticket t the holder of next (a private copy) with
// the next fence of set's range (nextFence), and returns the grant and the
// ticket's new entry (whose absence the write compares): the only write of
// that entry. idx is t's queue position, or -1.
func grantLease(next *Record, resource string, set Settings, t Waiter, idx int, now int64, lim Limits) (GrantBody, EntryPut, error) {
	above := max(next.HighestFence, next.Floor)
	fence, err := nextFence(resource, next, set)
	if err != nil {
		return GrantBody{}, EntryPut{}, err
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
		IssuerEpoch:      lim.IssuerEpoch,
		TTLMs:            t.TTLMs,
		IssuedAtMs:       now,
		HeldUntilMs:      heldUntilMs(now, t.TTLMs, lim),
	}
	next.Holder = &Holder{Grant: body, ParamsDigest: t.ParamsDigest, ExpiresAtMs: now + int64(t.TTLMs), Members: t.Members}
	next.HighestFence = fence
	assertGranted(resource, next, above)
	if idx >= 0 {
		next.Waiters = append(next.Waiters[:idx:idx], next.Waiters[idx+1:]...)
	}
	return body, EntryPut{
		Key:   RequestKey{Owner: t.Owner, RequestID: t.RequestID},
		Entry: RequestEntry{Grant: body, ParamsDigest: t.ParamsDigest, State: grant.StateHeld},
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
	if fence <= above { // tested here, not by assert.That: its arguments would be boxed on every grant
		assert.Fail("registry: fence %d for %s is not above max(highestFence, floor) %d", fence, resource, above)
	}
}

// assertGranted checks the record a grant leaves behind, next, against
// the max(highestFence, floor) it was allocated from.
func assertGranted(resource string, next *Record, above uint64) {
	fence := next.Holder.Grant.FenceToken
	assertFenceAbove(resource, fence, above)
	if next.HighestFence != fence || next.HighestFence <= next.Floor {
		assert.Fail("registry: %s granted fence %d but records highestFence %d, floor %d", resource, fence, next.HighestFence, next.Floor)
	}
}

// busyError says why the lease cannot be granted now, and what the caller
// needs next: who holds it, since when, for how long, how many wait.
func busyError(next *Record, in AcquireInput, now int64) error {
	sentinel := wire.ErrBusy
	if in.Wait {
		sentinel = wire.ErrWaitTimeout
	}
	v := LockView(in.Req.Resource, next, now, 0)
	return &wire.BusyError{Sentinel: sentinel, BusyDetail: wire.BusyDetail{
		Resource: in.Req.Resource, Holder: v.Holder, FreeAt: v.FreeAt, Waiters: len(v.Waiters), ReadAt: v.ReadAt,
	}}
}
