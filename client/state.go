package client

import "github.com/fencegate/fencegate/client/core"

// LeaseState is a lease's local state, as the specification names it:
// REQUESTED → HELD → RENEWING → HELD; an uncertain renewal or query →
// OWNERSHIP_UNKNOWN; registry-confirmed expiry → EXPIRED; a successful
// release → RELEASED. The transitions are one table in client/core. Not
// grant.State (the registry's word on a grant) nor gate.State (a
// resource's gate state).
type LeaseState = core.LeaseState

// The states.
const (
	StateRequested = core.StateRequested
	StateHeld      = core.StateHeld
	StateRenewing  = core.StateRenewing
	StateUnknown   = core.StateUnknown
	StateExpired   = core.StateExpired
	StateReleased  = core.StateReleased
)

// LeaseEvent is what moves a lease from one state to the next, as
// Options.OnTransition hears it: "RenewOK", "Deadline", … (client/core
// lists them, with the table they drive).
type LeaseEvent = core.Event
