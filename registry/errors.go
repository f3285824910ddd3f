package registry

import (
	"errors"
)

// Error is a sentinel rejection with a stable, machine-readable code. Callers
// branch with errors.Is against the exported sentinels; the HTTP layer maps
// the code (CodeOf) to its JSON {code, message} and status.
type Error struct {
	code string
	text string
}

// Code returns the stable code, such as "NOT_HOLDER".
func (e *Error) Code() string { return e.code }

func (e *Error) Error() string { return "registry: " + e.text }

// Sentinel errors. Every error the Registry returns wraps exactly one.
var (
	// ErrInvalid: a request field fails its rule (resource, owner, request
	// ID, operation ID or class, lease ID, a zero value where one is needed).
	ErrInvalid = &Error{"INVALID", "invalid request"}
	// ErrTTLOutOfRange: the requested TTL is outside [TTLMsMin, TTLMsMax].
	ErrTTLOutOfRange = &Error{"TTL_OUT_OF_RANGE", "ttl out of range"}
	// ErrRequestMismatch: the request ID was already used by this owner
	// with different parameters (resource, operation ID, class or TTL).
	ErrRequestMismatch = &Error{"REQUEST_MISMATCH", "request ID reused with different parameters"}
	// ErrBusy: the resource is held (or in lock-delay, or other waiters are
	// queued) and the acquire asked not to wait.
	ErrBusy = &Error{"BUSY", "resource busy"}
	// ErrWaitTimeout: the acquire waited its whole WaitMs without reaching
	// the head of the queue of a free resource. It holds nothing.
	ErrWaitTimeout = &Error{"WAIT_TIMEOUT", "wait timed out"}
	// ErrWaitersFull: the resource already has WaitersPerResourceMax waiters.
	ErrWaitersFull = &Error{"WAITERS_FULL", "too many waiters"}
	// ErrNotHolder: the lease is not (or no longer) held by this owner on
	// this resource: released, superseded or never granted.
	ErrNotHolder = &Error{"NOT_HOLDER", "not the holder"}
	// ErrLeaseExpired: the lease expired by the registry clock; it cannot
	// be renewed. The owner must stop and acquire again.
	ErrLeaseExpired = &Error{"LEASE_EXPIRED", "lease expired"}
	// ErrEpochRevoked: the grant's issuer epoch (or this registry's own
	// epoch) is below the revoked line; no proofs are issued for it.
	ErrEpochRevoked = &Error{"EPOCH_REVOKED", "issuer epoch revoked"}
	// ErrNotFound: no grant is known under that request ID or digest (never
	// issued, or its retention ended).
	ErrNotFound = &Error{"NOT_FOUND", "not found"}
	// ErrConflict: the store's compare-and-swap lost CASRetriesMax times in
	// a row to concurrent writers. Nothing was changed; retry later.
	ErrConflict = &Error{"CONFLICT", "too much contention"}
	// ErrUnavailable: the store could not be reached or answered with an
	// error. The outcome of a write may be unknown: retry with the same
	// request ID, never a new one.
	ErrUnavailable = &Error{"UNAVAILABLE", "store unavailable"}
	// ErrCorrupt: a stored value failed strict decoding or an invariant
	// (for example a fence at or below the floor). Nothing is issued.
	ErrCorrupt = &Error{"CORRUPT", "stored state corrupt"}
)

// CodeOf returns the stable code of the first *Error in err's chain, or ""
// when err is nil or carries none (a context error, for example).
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.code
	}
	return ""
}
