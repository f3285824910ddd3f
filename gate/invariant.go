package gate

import "github.com/fencegate/fencegate/internal/assert"

// The fence invariants, asserted on both sides of every write of a
// resource's state, as TigerBeetle asserts: Decide and DecideJob check
// the decision they return (assertDecided), and each adapter checks the
// state it is about to store against the state it read
// (adapt.Decider.CheckStore). A failure is a programmer error, so it
// panics (internal/assert); what a store hands back wrong is an operating
// error, found where it is read and returned.
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
