package wire

import (
	"errors"
	"fmt"
	"time"
)

// Error is a sentinel rejection with a stable, machine-readable code.
// Callers branch with errors.Is against the exported sentinels; the HTTP
// layer maps the code (CodeOf) to its JSON {code, message} and status.
type Error struct {
	code string
	text string
}

// Code returns the stable code, such as "NOT_HOLDER".
func (e *Error) Code() string { return e.code }

func (e *Error) Error() string { return "registry: " + e.text }

// The registry's sentinel errors. Every error the registry returns wraps
// exactly one; over HTTP, the client turns the answer's code back into
// the same sentinel.
var (
	// ErrInvalid: a request field fails its rule (resource, owner, request
	// ID, operation ID or class, lease ID, a zero value where one is needed).
	ErrInvalid = &Error{"INVALID", "invalid request"}
	// ErrTTLOutOfRange: the requested TTL is outside the registry's
	// [TTLMsMin, TTLMsMax].
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
	// ErrWaitersFull: the resource already has the most waiters the
	// registry allows.
	ErrWaitersFull = &Error{"WAITERS_FULL", "too many waiters"}
	// ErrNotHolder: the lease is not (or no longer) held by this owner on
	// this resource: released, superseded or never granted.
	ErrNotHolder = &Error{"NOT_HOLDER", "not the holder"}
	// ErrLeaseExpired: the lease expired by the registry clock; it cannot
	// be renewed. The owner must stop and acquire again.
	ErrLeaseExpired = &Error{"LEASE_EXPIRED", "lease expired"}
	// ErrLeaseBroken: an operator broke the lease (fencegate break): it
	// ended before its time and the resource went to the next waiter,
	// whose fence is higher. The owner must stop; its late writes are
	// refused at every gate once the next owner has written.
	ErrLeaseBroken = &Error{"LEASE_BROKEN", "lease broken by an operator"}
	// ErrEpochRevoked: the grant's issuer epoch (or this registry's own
	// epoch) is below the revoked line; no proofs are issued for it.
	ErrEpochRevoked = &Error{"EPOCH_REVOKED", "issuer epoch revoked"}
	// ErrNotFound: no grant is known under that request ID or digest (never
	// issued, or its retention ended).
	ErrNotFound = &Error{"NOT_FOUND", "not found"}
	// ErrConflict: the store's compare-and-swap lost too many times in a
	// row to concurrent writers. Nothing was changed; retry later.
	ErrConflict = &Error{"CONFLICT", "too much contention"}
	// ErrUnavailable: the store could not be reached or answered with an
	// error. The outcome of a write may be unknown: retry with the same
	// request ID, never a new one.
	ErrUnavailable = &Error{"UNAVAILABLE", "store unavailable"}
	// ErrCorrupt: a stored value failed strict decoding or an invariant
	// (for example a fence at or below the floor). Nothing is issued.
	ErrCorrupt = &Error{"CORRUPT", "stored state corrupt"}
	// ErrFenceRange: the registry cannot issue from its fence range until
	// an operator bumps it (fencegate fence-range bump): a resource used
	// up its generation's counter, a floor lies beyond the range, or the
	// store's generation went back below one this registry has seen (a
	// restore). Nothing was granted or signed.
	ErrFenceRange = &Error{"FENCE_RANGE", "fence range needs a bump"}
	// ErrStoreFull: the store is out of space (etcd's NOSPACE alarm, or
	// the registry's own high-water mark below the quota): new grants are
	// refused, and nothing was granted. Renewals, releases, status
	// queries and listings go on where the store lets them (etcd under
	// NOSPACE takes reads and deletes only); grants resume by themselves
	// once space is back (docs/operations.md, "The store's size").
	ErrStoreFull = &Error{"STORE_FULL", "store out of space"}
	// ErrPermitsMismatch: the acquire names another number of permits
	// than the one the resource was first used with: a semaphore's N is
	// recorded with it and never changes (use another name), and a plain
	// lock (permits 0) and a semaphore never share a name.
	ErrPermitsMismatch = &Error{"PERMITS_MISMATCH", "permits do not match the resource's"}
)

// RegistryErrors lists every registry sentinel, in a fixed order (for the
// HTTP client's mapping of codes back to sentinels, and for docs).
var RegistryErrors = []*Error{
	ErrInvalid, ErrTTLOutOfRange, ErrRequestMismatch, ErrBusy, ErrWaitTimeout, ErrWaitersFull,
	ErrNotHolder, ErrLeaseExpired, ErrLeaseBroken, ErrEpochRevoked, ErrNotFound, ErrConflict, ErrUnavailable, ErrCorrupt,
	ErrFenceRange, ErrStoreFull, ErrPermitsMismatch,
}

// CodeOf returns the stable code of the first *Error in err's chain, or
// "" when err is nil or carries none (a context error, for example).
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.code
	}
	return ""
}

// The HTTP layer's own codes: its refusals before or around a registry
// call. Registry errors carry the registry's codes above.
const (
	CodeBadRequest           = "BAD_REQUEST"            // 400: body not a valid request
	CodeTooLarge             = "TOO_LARGE"              // 413: body above the request limit
	CodeUnauthenticated      = "UNAUTHENTICATED"        // 401: no identity or bad credentials
	CodeForbidden            = "FORBIDDEN"              // 403: identity may not call this (admin)
	CodeForbiddenResource    = "FORBIDDEN_RESOURCE"     // 403: the resource policy does not let this identity do this to this resource
	CodeNotFound             = "NOT_FOUND"              // 404: no such endpoint
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"     // 405
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE" // 415: a body not declared application/json
	CodeInternal             = "INTERNAL"               // 500: an error without a code
	CodeNotReady             = "NOT_READY"              // 503: /readyz while the store does not answer
	CodeTimeout              = "TIMEOUT"                // 504: the call's deadline passed; outcome unknown
	CodeCanceled             = "CANCELED"               // 499: the caller went away
)

// ErrorBody is every error response: a stable code to branch on and a
// message for people.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Busy, with BUSY and WAIT_TIMEOUT, says who holds the resource
	// (BusyError).
	Busy *BusyDetail `json:"busy,omitempty"`
}

// BusyError is a refusal to grant because the resource is taken (ErrBusy
// without a wait, ErrWaitTimeout after one): it says what the caller needs
// next — who holds the resource, since when, for how much longer, and how
// many wait. errors.Is matches its sentinel; over HTTP it travels as the
// error body's "busy" detail and comes back as a *BusyError.
type BusyError struct {
	Sentinel *Error // ErrBusy or ErrWaitTimeout
	BusyDetail
}

// BusyDetail is the state behind a BusyError, as the registry read it.
type BusyDetail struct {
	Resource string      `json:"resource"`
	Holder   *LockHolder `json:"holder,omitempty"` // nil: free, but in lock-delay or others are queued first
	FreeAt   *time.Time  `json:"freeAt,omitempty"` // lock-delay ends
	Waiters  int         `json:"waiters"`
	ReadAt   time.Time   `json:"readAt"`
}

// Error says it in one line: "jobs/x is held by alice since 02:49:46 UTC
// (lease l3-…, 12.1s left; 1 waiter)".
func (e *BusyError) Error() string {
	d := e.BusyDetail
	waiters := fmt.Sprintf("%d waiters", d.Waiters)
	if d.Waiters == 1 {
		waiters = "1 waiter"
	}
	switch {
	case d.Holder != nil:
		left := max(d.Holder.ExpiresAt.Sub(d.ReadAt), 0).Round(100 * time.Millisecond)
		return fmt.Sprintf("%s is held by %s since %s (lease %s, fence %d, %s left; %s)", d.Resource, d.Holder.Owner,
			d.Holder.Since.UTC().Format("15:04:05 MST"), d.Holder.Lease, d.Holder.Fence, left, waiters)
	case d.FreeAt != nil && d.FreeAt.After(d.ReadAt):
		return fmt.Sprintf("%s is in lock-delay for %s after an expired lease (%s)", d.Resource, d.FreeAt.Sub(d.ReadAt).Round(time.Millisecond), waiters)
	}
	return fmt.Sprintf("%s is free, but %s are ahead in its queue", d.Resource, waiters)
}

// Unwrap gives the sentinel: errors.Is(err, ErrBusy) holds.
func (e *BusyError) Unwrap() error { return e.Sentinel }

// Code is the sentinel's code.
func (e *BusyError) Code() string { return e.Sentinel.code }
