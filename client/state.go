package client

import "github.com/fencegate/fencegate/client/core"

// State is a lease's state, as the specification names it: REQUESTED →
// HELD → RENEWING → HELD; an uncertain renewal or query → OWNERSHIP_UNKNOWN;
// registry-confirmed expiry → EXPIRED; a successful release → RELEASED.
// The transitions are one table in client/core.
type State = core.State

// The states.
const (
	StateRequested = core.StateRequested
	StateHeld      = core.StateHeld
	StateRenewing  = core.StateRenewing
	StateUnknown   = core.StateUnknown
	StateExpired   = core.StateExpired
	StateReleased  = core.StateReleased
)

// States lists every state, in the specification's order.
var States = core.States

// Event is what moves a lease from one state to the next
// (Options.OnTransition hears each).
type Event = core.Event

// The events.
const (
	EvAcquireOK        = core.EvAcquireOK
	EvAcquireLost      = core.EvAcquireLost
	EvRenewDue         = core.EvRenewDue
	EvRenewOK          = core.EvRenewOK
	EvRenewLost        = core.EvRenewLost
	EvRenewLate        = core.EvRenewLate
	EvRenewRefused     = core.EvRenewRefused
	EvDeadline         = core.EvDeadline
	EvQueryHeld        = core.EvQueryHeld
	EvQueryExpired     = core.EvQueryExpired
	EvQueryUnavailable = core.EvQueryUnavailable
	EvReleaseOK        = core.EvReleaseOK
	EvReleaseLost      = core.EvReleaseLost
	EvReleaseRefused   = core.EvReleaseRefused
)

// Events lists every event.
var Events = core.Events
