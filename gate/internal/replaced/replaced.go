// Package replaced holds the one way a negative control puts another
// function in place of gate.Decide: a Decide value carried in
// gate.Policy.NegativeControl, zero in every gate a deployment builds.
// Go lets only packages under gate/ import this one, so nothing a
// service, an adapter's user or a configuration outside gate/ writes can
// make a non-zero Decide: gate/gatebreak makes them, for the simulator's
// negative controls and for tests (imports_test.go at the root pins who
// imports it), and gate/adapt decides with them. The package keeps no
// state and installs nothing; the replacement travels in the policy
// value, and only there.
package replaced

// Decide is a function in place of gate.Decide, or nothing (the zero
// value). It is generic over gate's Input and Decision because package
// gate declares its field and so imports this package, which therefore
// cannot import gate.
type Decide[I, D any] struct{ decide func(I) D }

// With returns the Decide that calls decide in place of gate.Decide.
func With[I, D any](decide func(I) D) Decide[I, D] { return Decide[I, D]{decide} }

// Or returns r's function, or def (gate.Decide) when r replaces nothing.
func Or[I, D any](r Decide[I, D], def func(I) D) func(I) D {
	if r.decide == nil {
		return def
	}
	return r.decide
}

// Is reports whether r replaces the decision.
func Is[I, D any](r Decide[I, D]) bool { return r.decide != nil }
