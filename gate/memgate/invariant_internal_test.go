// Proves memgate asserts the fence invariant where it stores a state: a
// decision doctored to lower highestFence panics in commit and leaves the
// resource's state as it was.
package memgate

import (
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/internal/assert"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestCommitAssertsHighestFenceKept(t *testing.T) {
	dec := &adapt.Decider{Policy: gate.Policy{Verifier: gatetest.NewIssuer("mem").Verifier}}
	r := newResource("mem/one", gate.ModeEnforce)
	r.state.HighestFence = 7
	d := gate.Decision{Outcome: gate.Accepted, Store: true, State: gate.FenceState{Resource: "mem/one", Mode: gate.ModeEnforce, HighestFence: 6}}
	if assert.Catch(func() { r.commit(dec, d, &gate.Verified{}, nil, gatetest.T0) }) == nil {
		t.Fatal("a lowered highestFence was stored without an assertion failure")
	}
	if r.state.HighestFence != 7 {
		t.Fatalf("highestFence %d after the failed assertion, want 7", r.state.HighestFence)
	}
}
