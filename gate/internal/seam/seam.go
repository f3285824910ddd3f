// Package seam carries the one replacement of gate.Decide from package
// gate to gate/gatebreak, and nowhere else: Go lets only packages under
// gate/ import an internal package, so no configuration, adapter user or
// service can reach it. Package gate installs the replacing function in
// its init; gatebreak calls it. This package cannot import gate (gate
// imports it), so the hook is generic over gate's types.
package seam

import "fmt"

// replaceDecide is the function package gate installed: func(P, D) P
// for P = gate.Policy, D = func(gate.Input) gate.Decision.
var replaceDecide any

// Install records replace as the way to put a decision function in place
// of gate.Decide. Package gate calls it once, in its init.
func Install[P, D any](replace func(P, D) P) {
	if replaceDecide != nil {
		panic("gate/internal/seam: Install called twice")
	}
	replaceDecide = replace
}

// ReplaceDecide returns p with d in place of gate.Decide, through the
// function package gate installed.
func ReplaceDecide[P, D any](p P, d D) P {
	f, ok := replaceDecide.(func(P, D) P)
	if !ok {
		panic(fmt.Sprintf("gate/internal/seam: gate installed %T, not a replacement for %T", replaceDecide, p))
	}
	return f(p, d)
}
