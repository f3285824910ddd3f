// Proves the decision's half of the fence invariants can fire: a
// decision that lowers highestFence, or an accept below it, at the floor
// or not stored as the new highestFence, panics with an assertion
// failure; the decisions Decide makes pass.
package gate

import (
	"testing"

	"github.com/fencegate/fencegate/internal/assert"
)

// mustFail runs f and fails t unless it panics with an assertion failure.
func mustFail(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if _, ok := recover().(assert.Failure); !ok {
			t.Errorf("%s: no assertion failure", name)
		}
	}()
	f()
}

func TestAssertDecidedFires(t *testing.T) {
	in := func(fence, highest, floor uint64) Input {
		return Input{Verified: &Verified{Mutation: Mutation{FenceToken: fence}},
			State: State{Resource: "r", HighestFence: highest, Floor: floor}}
	}
	decided := func(o Outcome, highest uint64) Decision {
		return Decision{Outcome: o, State: State{Resource: "r", HighestFence: highest}}
	}
	mustFail(t, "a rejection that lowers highestFence", func() { assertDecided(in(3, 7, 0), decided(StaleOwner, 3)) })
	mustFail(t, "an accept below highestFence", func() { assertDecided(in(5, 7, 0), decided(Accepted, 7)) })
	mustFail(t, "an accept at the floor", func() { assertDecided(in(9, 7, 9), decided(Accepted, 9)) })
	mustFail(t, "an accept that keeps the old highestFence", func() { assertDecided(in(8, 7, 0), decided(Accepted, 7)) })

	assertDecided(in(8, 7, 0), decided(Accepted, 8))
	assertDecided(in(7, 7, 0), decided(Accepted, 7))
	assertDecided(in(3, 7, 0), decided(StaleOwner, 7))
}
