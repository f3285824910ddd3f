// Proves objgate asserts the fence invariant where it stores a state: a
// replace doctored to lower highestFence panics before it writes.
package objgate

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/internal/assert"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestReplaceAssertsHighestFenceKept(t *testing.T) {
	g := &Gate{dec: adapt.Decider{Policy: gate.Policy{Verifier: gatetest.NewIssuer("obj").Verifier}}} // no store: the assertion comes first
	h := g.newHeld("obj/one", gate.ModeEnforce)
	h.st.HighestFence = 7
	next := h
	next.st.HighestFence = 6
	if assert.Catch(func() { _, _ = g.replace(context.Background(), "obj/one", h, next) }) == nil {
		t.Fatal("a lowered highestFence reached the store without an assertion failure")
	}
}
