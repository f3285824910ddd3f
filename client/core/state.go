package core

import (
	"fmt"

	"github.com/fencegate/fencegate/internal/assert"
)

// LeaseState is a lease's local state, named exactly as the specification
// names it (not grant.State, the registry's word on a grant, nor
// gate.State, a resource's gate state). Only HELD and RENEWING mean the
// client may produce new effects; every other state means it must not.
type LeaseState string

// The six client states.
const (
	// StateRequested: an acquire is in flight or its answer was lost; the
	// request ID is kept until a final answer.
	StateRequested LeaseState = "REQUESTED"
	// StateHeld: the registry confirmed this grant HELD and the local
	// deadline has not passed.
	StateHeld LeaseState = "HELD"
	// StateRenewing: a renewal or status refresh is in flight; ownership is
	// still certain until its answer is lost or late.
	StateRenewing LeaseState = "RENEWING"
	// StateUnknown: a renewal or query result is uncertain (lost, late, or
	// the local deadline passed). No new effects; writes already sent are
	// NOT assumed revoked. Left only on the registry's word.
	StateUnknown LeaseState = "OWNERSHIP_UNKNOWN"
	// StateExpired: the registry confirmed the grant is no longer held
	// (expired, revoked, superseded). Terminal.
	StateExpired LeaseState = "EXPIRED"
	// StateReleased: a voluntary release succeeded. Terminal.
	StateReleased LeaseState = "RELEASED"
)

// States lists every state in a fixed order (for tables and docs).
var States = []LeaseState{StateRequested, StateHeld, StateRenewing, StateUnknown, StateExpired, StateReleased}

// Certain reports whether s lets the client produce new effects.
func (s LeaseState) Certain() bool { return s == StateHeld || s == StateRenewing }

// Terminal reports whether no event can leave s.
func (s LeaseState) Terminal() bool { return s == StateExpired || s == StateReleased }

// Event is an input to the lease state machine: an answer (or its absence)
// from the registry, or a local timer.
type Event string

// Events. "Lost" means the request may or may not have been applied: a
// timeout, a reset connection, a registry that could not reach its store.
const (
	EvAcquireOK        Event = "AcquireOK"        // the registry answered the acquire: HELD
	EvAcquireLost      Event = "AcquireLost"      // the acquire's answer is unknown; retry with the same request ID
	EvRenewDue         Event = "RenewDue"         // time to renew, or to refresh the status proof
	EvRenewOK          Event = "RenewOK"          // the registry confirmed this grant HELD in time
	EvRenewLost        Event = "RenewLost"        // the renewal's answer is unknown
	EvRenewLate        Event = "RenewLate"        // the answer came after the renewal's deadline
	EvRenewRefused     Event = "RenewRefused"     // the registry said definitely: not held (expired, not holder, revoked)
	EvDeadline         Event = "Deadline"         // the local deadline passed without a confirmation (a pause, a slow registry)
	EvQueryHeld        Event = "QueryHeld"        // while unknown: the registry confirmed the same grant HELD
	EvQueryExpired     Event = "QueryExpired"     // while unknown: the registry confirmed the grant is not held
	EvQueryUnavailable Event = "QueryUnavailable" // while unknown: no answer again
	EvReleaseOK        Event = "ReleaseOK"        // the registry confirmed the release
	EvReleaseLost      Event = "ReleaseLost"      // the release's answer is unknown
	EvReleaseRefused   Event = "ReleaseRefused"   // the registry said the lease had already ended (not by this release)
)

// Events lists every event in a fixed order.
var Events = []Event{
	EvAcquireOK, EvAcquireLost, EvRenewDue, EvRenewOK, EvRenewLost, EvRenewLate,
	EvRenewRefused, EvDeadline, EvQueryHeld, EvQueryExpired, EvQueryUnavailable,
	EvReleaseOK, EvReleaseLost, EvReleaseRefused,
}

// transitions is the whole machine. A (state, event) pair that is not here
// is an illegal transition: the shell has a bug, and step panics.
var transitions = map[LeaseState]map[Event]LeaseState{
	StateRequested: {
		EvAcquireOK:   StateHeld,
		EvAcquireLost: StateRequested,
	},
	StateHeld: {
		EvRenewDue:       StateRenewing,
		EvDeadline:       StateUnknown,
		EvReleaseOK:      StateReleased,
		EvReleaseLost:    StateUnknown,
		EvReleaseRefused: StateExpired,
	},
	StateRenewing: {
		EvRenewOK:      StateHeld,
		EvRenewLost:    StateUnknown,
		EvRenewLate:    StateUnknown,
		EvRenewRefused: StateExpired,
		EvDeadline:     StateUnknown,
	},
	StateUnknown: {
		EvQueryHeld:        StateHeld,
		EvQueryExpired:     StateExpired,
		EvQueryUnavailable: StateUnknown,
		EvReleaseOK:        StateReleased,
		EvReleaseLost:      StateUnknown,
		EvReleaseRefused:   StateExpired,
	},
	StateExpired:  {},
	StateReleased: {},
}

// Effects are what the shell must do after a transition, derived only from
// the (from, to) pair.
type Effects struct {
	// CancelCtx: ownership stopped being certain; cancel the current
	// ownership context now.
	CancelCtx bool
	// NewCtx: ownership became certain again; issue a fresh context (a
	// cancelled context is never revived).
	NewCtx bool
	// Query: ownership just became unknown; ask the registry about the
	// same grant at once.
	Query bool
	// Done: the lease ended; close Done().
	Done bool
}

// next returns the state ev leads to from s, and whether it is legal.
func next(s LeaseState, ev Event) (LeaseState, bool) {
	to, ok := transitions[s][ev]
	return to, ok
}

// effects of moving from one state to another.
func effects(from, to LeaseState) Effects {
	return Effects{
		CancelCtx: from.Certain() && !to.Certain(),
		NewCtx:    !from.Certain() && to.Certain(),
		Query:     to == StateUnknown && from != StateUnknown,
		Done:      to.Terminal(),
	}
}

// Machine is the pure lease state machine: no clock, no I/O, no locks.
// Lease (the shell) owns all three and feeds it events; a simulator that
// models the network as events may drive it directly, with Schedule for
// the timing, and run exactly this transition table.
type Machine struct {
	state LeaseState
}

// NewMachine returns a machine in REQUESTED.
func NewMachine() Machine { return Machine{state: StateRequested} }

// State returns the current state.
func (m *Machine) State() LeaseState { return m.state }

// Step applies ev and returns the new state and what the caller must do.
// An illegal transition is a programmer error and panics through assert.
func (m *Machine) Step(ev Event) (LeaseState, Effects) {
	from := m.state
	to, ok := next(from, ev)
	assert.That(ok, "client: illegal transition %s --%s-->", from, ev)
	m.state = to
	return to, effects(from, to)
}

// String renders the machine for debugging.
func (m *Machine) String() string { return fmt.Sprintf("Machine{%s}", m.state) }
