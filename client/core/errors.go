package core

import (
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/wire"
)

// The cores' errors. client re-exports them (client.ErrNotCertain is
// ErrNotCertain): callers branch with errors.Is against either.
var (
	// ErrOutcomeUnknown: a registry call's answer was lost (timeout, reset
	// connection, unavailable store): it may or may not have been applied.
	// Transports may wrap it; any error without a definite registry code is
	// treated the same way.
	ErrOutcomeUnknown = errors.New("client: outcome unknown")
	// ErrRefused: the transport itself refused the call definitely, before
	// the registry acted on it (bad request, not authenticated, forbidden).
	// Transports wrap it; the client treats it as a final "no".
	ErrRefused = errors.New("client: refused")
	// ErrNotCertain: the lease does not let the client produce effects
	// now: ownership is not certain (state not HELD/RENEWING, local
	// deadline passed, or releasing). Not the gate's NOT_HELD
	// (gate.ErrNotHeld), which is the registry's word on a grant.
	ErrNotCertain = errors.New("client: ownership not certain")
	// ErrProofStale: the status proof is too close to its validUntil to
	// send; the lease refreshes it on its own schedule.
	ErrProofStale = errors.New("client: status proof stale")
	// ErrBadAnswer: the registry answered about another grant or request.
	ErrBadAnswer = errors.New("client: bad answer")
	// ErrUnreachable: Limits.AcquireLostMax calls in a row got no answer.
	// The error also wraps the last call's error (the cause: a refused
	// connection, a DNS failure, a timeout). The request ID stays pending.
	ErrUnreachable = errors.New("client: registry unreachable")
)

// NotCertainError says why an envelope was refused: which lease, in
// which state, and why ownership is not certain.
type NotCertainError struct {
	Lease  string
	State  LeaseState
	Reason string // "state not HELD or RENEWING", "releasing", "local deadline passed"
}

func (e *NotCertainError) Error() string {
	return fmt.Sprintf("client: ownership not certain: lease %s is %s: %s", e.Lease, e.State, e.Reason)
}

// Unwrap returns ErrNotCertain.
func (e *NotCertainError) Unwrap() error { return ErrNotCertain }

// ErrSettings: a client setting (a time limit, a fraction, a lease's
// TTL) cannot work; the error is a *SettingsError naming the range that
// can. Nothing was sent.
var ErrSettings = errors.New("client: setting cannot work")

// SettingsError says which setting cannot work, and what would.
type SettingsError struct {
	Setting string // the Options field, or "TTL" for an acquire's TTL
	Value   string // as given
	Want    string // the range that works, e.g. "at least 2s"
	Why     string // where the range comes from
	// TTL marks a lease TTL below what the client's margins allow: the
	// error then also matches wire.ErrTTLOutOfRange, as the registry's
	// own refusal of a TTL outside its range does.
	TTL bool
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("client: %s %s cannot work: want %s (%s)", e.Setting, e.Value, e.Want, e.Why)
}

// Unwrap returns ErrSettings, and wire.ErrTTLOutOfRange for a TTL.
func (e *SettingsError) Unwrap() []error {
	if e.TTL {
		return []error{ErrSettings, wire.ErrTTLOutOfRange}
	}
	return []error{ErrSettings}
}
