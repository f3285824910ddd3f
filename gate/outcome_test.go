// This file pins which answers are final for every copy of an envelope:
// only SEGMENT_GAP, RESOURCE_PAUSED and NOT_HELD can be followed by an
// accept of the same envelope, so only they keep it unsettled.
package gate_test

import (
	"testing"

	"github.com/fencegate/fencegate/gate"
)

func TestOutcomeFinal(t *testing.T) {
	notFinal := map[gate.Outcome]bool{gate.SegmentGap: true, gate.ResourcePaused: true, gate.NotHeld: true}
	for _, o := range gate.Outcomes {
		if got := o.Final(); got == notFinal[o] {
			t.Errorf("%s.Final() = %v", o, got)
		}
	}
	if gate.Outcome("").Final() {
		t.Error(`an unknown outcome ("") must not count as final`)
	}
}
