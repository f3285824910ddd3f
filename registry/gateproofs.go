package registry

import (
	"fmt"

	"github.com/fencegate/fencegate/grant"
)

// GateProver makes the per-gate proofs that travel beside the registry's
// own: for each gate enrolled for resource, that gate's MAC under its
// active key over each signed message (status may be nil when the answer
// carries none). It is consulted only where the registry signs, never for
// a revoked epoch. Implementations hold their secrets themselves (the
// registry never stores or logs them) and must be safe for concurrent
// use; an error fails the answer it was asked for.
type GateProver interface {
	GateProofs(resource string, g, status grant.Message) ([]grant.GateProof, error)
}

// WithGateProofs makes every signed answer carry p's per-gate proofs
// (wire.Issued.GateProofs). Optional: by default none.
func WithGateProofs(p GateProver) Option {
	return func(r *Registry) { r.gates = p }
}

// gateProofs asks the GateProver, if any, for g's and st's gate proofs.
func (r *Registry) gateProofs(g *grant.Grant, st *grant.Status) ([]grant.GateProof, error) {
	if r.gates == nil {
		return nil, nil
	}
	var status grant.Message
	if st != nil {
		status = st
	}
	ps, err := r.gates.GateProofs(g.Resource, g, status)
	if err != nil {
		return nil, fmt.Errorf("registry: gate proofs: %w", err)
	}
	return ps, nil
}
