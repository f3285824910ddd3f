package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client/core"
)

// Sentinel errors. Callers branch with errors.Is; typed errors carry the
// data and wrap one of these.
var (
	// ErrOutcomeUnknown: a registry call's answer was lost (timeout, reset
	// connection, unavailable store): it may or may not have been applied.
	ErrOutcomeUnknown = core.ErrOutcomeUnknown
	// ErrRefused: the transport itself refused the call definitely, before
	// the registry acted on it (bad request, not authenticated, forbidden).
	// Transports wrap it; the client treats it as a final "no".
	ErrRefused = core.ErrRefused
	// ErrNotCertain: the lease does not let the client produce effects
	// now: ownership is not certain (state not HELD/RENEWING, local
	// deadline passed, or releasing). The error is a *NotCertainError
	// saying why. Not the gate's NOT_HELD (gate.ErrNotHeld), the
	// registry's word on a grant that a gate passes on.
	ErrNotCertain = core.ErrNotCertain
	// ErrProofStale: the status proof is too close to its validUntil to
	// send; the lease refreshes it on its own schedule: ask again.
	ErrProofStale = core.ErrProofStale
	// ErrBadAnswer: the registry answered about another grant or request.
	ErrBadAnswer = core.ErrBadAnswer
	// ErrUnreachable: Options.AcquireLostMax calls in a row got no answer.
	// The error also wraps the last call's error (the cause: a refused
	// connection, a DNS failure, a timeout). The request ID stays pending.
	ErrUnreachable = core.ErrUnreachable
	// ErrForeignEnvelope: Lease.Refresh was given an envelope of another
	// lease, fence or operation.
	ErrForeignEnvelope = errors.New("client: envelope of another lease")
	// ErrAlreadyHeld: the session already has a live lease on the resource;
	// it never runs two identities for one resource at once.
	ErrAlreadyHeld = errors.New("client: already held")
	// ErrAcquirePending: an earlier acquire on the resource has no final
	// answer yet and asked for something else; its request ID is kept until
	// it has one or until it is presumed over.
	ErrAcquirePending = errors.New("client: acquire pending")
	// ErrSettings: a setting (an Options field, an acquire's TTL) cannot
	// work; the error is a *SettingsError naming the range that can.
	// Nothing was sent.
	ErrSettings = core.ErrSettings
	// ErrSuperseded: the resource answered with a higher fence (or stale
	// owner, or fence regression): the rest of the work is abandoned.
	ErrSuperseded = errors.New("client: superseded")
)

// NotCertainError says why an envelope was refused; it wraps
// ErrNotCertain.
type NotCertainError = core.NotCertainError

// SettingsError names a setting that cannot work, its value and the
// range that works; it wraps ErrSettings (and, for an acquire's TTL,
// wire.ErrTTLOutOfRange).
type SettingsError = core.SettingsError

// PendingError names the request ID an earlier acquire still owns and the
// instant (client clock) after which it is presumed over.
type PendingError struct {
	Resource   string
	RequestID  string
	ReusableAt time.Time
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("client: acquire pending: resource %s: request %s has no final answer; a new request ID is allowed after %s",
		e.Resource, e.RequestID, e.ReusableAt.UTC().Format(time.RFC3339Nano))
}

// Unwrap returns ErrAcquirePending.
func (e *PendingError) Unwrap() error { return ErrAcquirePending }
