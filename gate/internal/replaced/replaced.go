// Package replaced holds the ways a negative control puts another
// function in place of gate.Decide or of the proof check: a Decide value
// carried in gate.Policy.NegativeControl and a Verify value in
// gate.Policy.NegativeVerify, zero in every gate a deployment builds.
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

// Verify is a function in place of the trust bundle's proof check
// (grant.Verifier.VerifyDigest) in gate.Policy.Authenticate, or nothing
// (the zero value): gate.Policy.NegativeVerify, made only by
// gate/gatebreak, as Decide is.
type Verify[D any] struct {
	verify func(schema string, d D, epoch uint64, proof string) error
}

// WithVerify returns the Verify that calls verify in place of the
// verifier's check.
func WithVerify[D any](verify func(schema string, d D, epoch uint64, proof string) error) Verify[D] {
	return Verify[D]{verify}
}

// OrVerify returns r's function, or def (the verifier's) when r replaces
// nothing.
func OrVerify[D any](r Verify[D], def func(schema string, d D, epoch uint64, proof string) error) func(string, D, uint64, string) error {
	if r.verify == nil {
		return def
	}
	return r.verify
}

// Check is one check of gate.Policy.Authenticate that a negative control
// turns off, or nothing (the zero value: the check runs):
// gate.Policy.NegativeReadGrant, made only by gate/gatebreak, as Decide
// is.
type Check struct{ off bool }

// Off returns the Check that turns its check off.
func Off() Check { return Check{off: true} }

// Runs reports whether c leaves its check on.
func Runs(c Check) bool { return !c.off }
