package registry

import (
	"fmt"
	"math"

	"github.com/fencegate/fencegate/grant"
)

// acquireInput is a validated acquire.
type acquireInput struct {
	owner      string
	req        AcquireRequest
	ttlMs      uint64 // effective TTL, inside [TTLMsMin, TTLMsMax]
	wait       bool
	deadlineMs int64 // when wait: the registry instant the wait ends
}

func (in acquireInput) key() RequestKey {
	return RequestKey{Owner: in.owner, RequestID: in.req.RequestID}
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
)

type acquireDecision struct {
	outcome acquireOutcome
	record  *Record // nil: no record write
	entries []entryPut
	body    GrantBody // outGranted
}

// validateAcquire checks an acquire's fields and returns its effective TTL.
func validateAcquire(owner string, req AcquireRequest, cfg Config) (uint64, error) {
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
			return 0, fmt.Errorf("%w: %s: %v", ErrInvalid, c.field, c.err)
		}
	}
	ttl := req.TTLMs
	if ttl == 0 {
		ttl = cfg.TTLMsDefault
	}
	if ttl < cfg.TTLMsMin || ttl > cfg.TTLMsMax {
		return 0, fmt.Errorf("%w: ttlMs %d outside [%d, %d]", ErrTTLOutOfRange, ttl, cfg.TTLMsMin, cfg.TTLMsMax)
	}
	return ttl, nil
}

// decideAcquire decides an acquire against rec, the request's own entry
// (nil when absent) and the settings, at now. The lease is granted when the
// resource has no live holder, lock-delay has passed, and the caller is the
// head of the queue (or the queue is empty); the fence is the higher of the
// highest issued fence and the floor, plus one.
func decideAcquire(rec *Record, own *RequestEntry, set Settings, in acquireInput, now int64, cfg Config) (acquireDecision, error) {
	digest := paramsDigest(in.req.Resource, in.req.OperationID, in.req.OperationClass, in.ttlMs)
	if own != nil {
		if !retained(own, now, cfg) {
			return acquireDecision{outcome: outPurge}, nil
		}
		if own.ParamsDigest != digest {
			return acquireDecision{}, fmt.Errorf("%w: request %s was issued for other parameters", ErrRequestMismatch, in.req.RequestID)
		}
		return acquireDecision{outcome: outExisting}, nil
	}
	if cfg.IssuerEpoch < set.RevokedBelowEpoch {
		return acquireDecision{}, fmt.Errorf("%w: this registry's epoch %d is below %d", ErrEpochRevoked, cfg.IssuerEpoch, set.RevokedBelowEpoch)
	}
	next, puts, changed := normalize(rec, set, now, cfg)
	idx := waiterIndex(next, in.key())
	if idx != 0 && skipVanishedHead(next, now, cfg) {
		changed = true
		idx = waiterIndex(next, in.key())
	}
	free := next.Holder == nil && now >= next.FreeAtMs
	if free && (idx == 0 || idx < 0 && len(next.Waiters) == 0) {
		return grantLease(next, puts, in, idx, digest, now, cfg.IssuerEpoch)
	}
	if !in.wait || now >= in.deadlineMs {
		return acquireDecision{}, busyError(next, in, now)
	}
	if idx < 0 {
		if len(next.Waiters) >= cfg.WaitersPerResourceMax {
			return acquireDecision{}, fmt.Errorf("%w: %s has %d waiters, limit %d", ErrWaitersFull, in.req.Resource, len(next.Waiters), cfg.WaitersPerResourceMax)
		}
		next.Waiters = append(next.Waiters, Waiter{Owner: in.owner, RequestID: in.req.RequestID, DeadlineMs: in.deadlineMs})
		changed = true
	} else if next.Waiters[idx].DeadlineMs != in.deadlineMs {
		next.Waiters[idx].DeadlineMs = in.deadlineMs // a retry of the same request moves its deadline, not its place
		changed = true
	}
	if !changed {
		return acquireDecision{outcome: outQueued}, nil
	}
	return acquireDecision{outcome: outQueued, record: next, entries: puts}, nil
}

// grantLease makes the caller the holder of next (a private copy).
func grantLease(next *Record, puts []entryPut, in acquireInput, idx int, digest string, now int64, epoch uint64) (acquireDecision, error) {
	fence := max(next.HighestFence, next.Floor)
	if fence == math.MaxUint64 {
		return acquireDecision{}, fmt.Errorf("%w: %s: fence sequence exhausted", ErrCorrupt, in.req.Resource)
	}
	fence++
	body := GrantBody{
		Resource:         in.req.Resource,
		Owner:            in.owner,
		RequestID:        in.req.RequestID,
		Lease:            leaseID(in.req.Resource, in.owner, in.req.RequestID, fence, now),
		OperationRoot:    grant.OperationRoot(in.req.Resource, in.req.OperationID).String(),
		OperationClass:   in.req.OperationClass,
		FenceToken:       fence,
		PolicyGeneration: next.PolicyGeneration,
		IssuerEpoch:      epoch,
		TTLMs:            in.ttlMs,
		IssuedAtMs:       now,
	}
	next.Holder = &Holder{Grant: body, ParamsDigest: digest, ExpiresAtMs: now + int64(in.ttlMs)}
	next.HighestFence = fence
	if idx == 0 {
		next.Waiters = next.Waiters[1:]
	}
	puts = append(puts, entryPut{
		key:   in.key(),
		entry: RequestEntry{Grant: body, ParamsDigest: digest, State: grant.StateHeld},
		own:   true,
	})
	return acquireDecision{outcome: outGranted, record: next, entries: puts, body: body}, nil
}

// busyError says why the lease cannot be granted now.
func busyError(next *Record, in acquireInput, now int64) error {
	sentinel := ErrBusy
	if in.wait {
		sentinel = ErrWaitTimeout
	}
	switch {
	case next.Holder != nil:
		return fmt.Errorf("%w: %s is held", sentinel, in.req.Resource)
	case now < next.FreeAtMs:
		return fmt.Errorf("%w: %s is in lock-delay for %d ms", sentinel, in.req.Resource, next.FreeAtMs-now)
	default:
		return fmt.Errorf("%w: %s has %d waiters ahead", sentinel, in.req.Resource, len(next.Waiters))
	}
}
