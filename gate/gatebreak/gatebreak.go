// Package gatebreak replaces gate.Decide in a gate.Policy, for negative
// controls only: the simulator's decision breaks (sim/negative), and
// tests that must show a checker catching a broken decision while every
// other step (parsing, proofs, binding, the adapter's locking and
// storage) runs the product's code. It is not configuration: the policy's
// NegativeControl field has a type only packages under gate/ can make,
// and imports_test.go (at the root) fails if any package but the
// simulator's negative controls and tests imports this one, directly or
// through another package — so the binary never links it.
package gatebreak

import (
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/replaced"
	"github.com/fencegate/fencegate/grant"
)

// Replace returns a copy of p that gate/adapt's Decider decides with d
// instead of gate.Decide; p itself is unchanged. A Decider on the
// returned policy checks nothing it stores (adapt.Decider.CheckStore),
// so that a replacement that breaks the fence invariants on purpose
// reaches the checker that must catch it; gate.Decide, which d may call,
// still asserts them on its own input.
func Replace(p gate.Policy, d func(gate.Input) gate.Decision) gate.Policy {
	p.NegativeControl = replaced.With(d)
	return p
}

// ReplaceVerify returns a copy of p whose Authenticate checks grant and
// status proofs with v instead of p.Verifier; p itself is unchanged.
func ReplaceVerify(p gate.Policy, v func(schema string, d grant.Digest, epoch uint64, proof string) error) gate.Policy {
	p.NegativeVerify = replaced.WithVerify(v)
	return p
}

// AcceptReaderGrants returns a copy of p whose Authenticate skips the
// READ_GRANT check: a read/write lock reader's grant (NAME/_read) is
// judged for a mutation as any grant; p itself is unchanged.
func AcceptReaderGrants(p gate.Policy) gate.Policy {
	p.NegativeReadGrant = replaced.Off()
	return p
}
