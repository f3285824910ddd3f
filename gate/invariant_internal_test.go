// Proves the decision's half of the fence invariants can fire: a
// decision that lowers highestFence, or an accept below it, at the floor
// or not stored as the new highestFence, panics with an assertion
// failure; the decisions Decide makes pass.
package gate

import (
	"testing"

	"github.com/fencegate/fencegate/internal/assert"
)

func TestAssertDecidedFires(t *testing.T) {
	in := func(fence, highest, floor uint64) Input {
		return Input{Verified: &Verified{Mutation: Mutation{FenceToken: fence}},
			State: FenceState{Resource: "r", HighestFence: highest, Floor: floor}}
	}
	decided := func(o Outcome, highest uint64) Decision {
		return Decision{Outcome: o, State: FenceState{Resource: "r", HighestFence: highest}}
	}
	for name, broken := range map[string]struct {
		in Input
		d  Decision
	}{
		"a rejection that lowers highestFence":      {in(3, 7, 0), decided(StaleOwner, 3)},
		"an accept below highestFence":              {in(5, 7, 0), decided(Accepted, 7)},
		"an accept at the floor":                    {in(9, 7, 9), decided(Accepted, 9)},
		"an accept that keeps the old highestFence": {in(8, 7, 0), decided(Accepted, 7)},
	} {
		if assert.Catch(func() { assertDecided(broken.in, broken.d) }) == nil {
			t.Errorf("%s: no assertion failure", name)
		}
	}

	assertDecided(in(8, 7, 0), decided(Accepted, 8))
	assertDecided(in(7, 7, 0), decided(Accepted, 7))
	assertDecided(in(3, 7, 0), decided(StaleOwner, 7))
}
