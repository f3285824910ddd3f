// Package gatebreak replaces gate.Decide in a gate.Policy, for negative
// controls only: the simulator's --break modes, and tests that must show
// a checker catching a broken decision while every other step (parsing,
// proofs, binding, the adapter's locking and storage) runs the product's
// code. It is not configuration: no field of gate.Policy can replace
// Decide, and imports_test.go (at the root) fails if any package but the
// simulator (sim/) and tests imports this one.
package gatebreak

import (
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/seam"
)

// Replace returns a copy of p whose DecideLocked and Redecide call d
// instead of gate.Decide. p itself is unchanged. The returned policy's
// CheckStore asserts nothing, so that a replacement that breaks the fence
// invariants on purpose reaches the checker that must catch it; Decide
// itself, which d may call, still asserts them on its own input.
func Replace(p gate.Policy, d func(gate.Input) gate.Decision) gate.Policy {
	return seam.ReplaceDecide(p, d)
}
