// Proves the adapters' half of the fence invariants, Decider.CheckStore,
// can fire: storing a lower highestFence, or another resource's state,
// panics with an assertion failure; a Decider whose policy carries a
// negative control (gate/gatebreak) lets its broken state through.
package adapt_test

import (
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/gatebreak"
	"github.com/fencegate/fencegate/internal/assert"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func panicsWithAssertion(f func()) bool { return assert.Catch(f) != nil }

func TestCheckStoreFires(t *testing.T) {
	d := &adapt.Decider{Policy: gate.Policy{Verifier: gatetest.NewIssuer("check").Verifier}}
	read := gate.FenceState{Resource: "r", HighestFence: 7}
	lower, other, higher := read, read, read
	lower.HighestFence, other.Resource, higher.HighestFence = 6, "s", 8
	for _, c := range []struct {
		name string
		next gate.FenceState
		fire bool
	}{{"lower highestFence", lower, true}, {"another resource", other, true}, {"higher", higher, false}, {"equal", read, false}} {
		if got := panicsWithAssertion(func() { d.CheckStore(read, c.next) }); got != c.fire {
			t.Errorf("%s: fired %v, want %v", c.name, got, c.fire)
		}
	}
	broken := &adapt.Decider{Policy: gatebreak.Replace(d.Policy, gate.Decide)}
	if panicsWithAssertion(func() { broken.CheckStore(read, lower) }) {
		t.Error("a negative control's decider asserted: its broken state would never reach the checker")
	}
}
