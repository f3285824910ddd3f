package gate

import "github.com/fencegate/fencegate/internal/assert"

// The fence invariants, asserted on both sides of every write of a
// resource's state, as TigerBeetle asserts: Decide and DecideJob check
// the decision they return (assertDecided), and each adapter checks the
// state it is about to store against the state it read
// (Policy.CheckStore). A failure is a programmer error, so it panics
// (internal/assert); what a store hands back wrong is an operating error,
// found where it is read and returned.
//
//   - highestFence never falls: whatever the outcome, the state after a
//     decision holds a highestFence at least the one before.
//   - An accept's fence is at least highestFence and above the floor of
//     the last Resume, and becomes the new highestFence.

// assertDecided checks decision d, taken on in.
func assertDecided(in Input, d Decision) {
	before, after := in.State.HighestFence, d.State.HighestFence
	assert.That(after >= before, "gate: %s on %s lowers highestFence from %d to %d", d.Outcome, in.State.Resource, before, after)
	if d.Outcome != Accepted {
		return
	}
	fence := in.Verified.Mutation.FenceToken
	assert.That(fence >= before && fence > in.State.Floor && after == fence,
		"gate: ACCEPTED fence %d on %s with highestFence %d and floor %d, stored highestFence %d",
		fence, in.State.Resource, before, in.State.Floor, after)
}

// CheckStore is an adapter's half of the fence invariants: called just
// before it writes next over read (the state it decided on, or that an
// operator action acted on), it panics unless next is the same
// resource's state with a highestFence at least read's. A violation is a
// programmer error in the adapter, never an operating one.
//
// A policy whose decision a negative control replaced (gate/gatebreak)
// checks nothing: the control's broken state must reach the simulator's
// checker, which is what the control tests.
func (p *Policy) CheckStore(read, next FenceState) {
	if p.decide != nil {
		return
	}
	assert.That(next.Resource == read.Resource, "gate: storing the state of %s over that of %s", next.Resource, read.Resource)
	assert.That(next.HighestFence >= read.HighestFence, "gate: storing highestFence %d of %s over %d",
		next.HighestFence, next.Resource, read.HighestFence)
}
