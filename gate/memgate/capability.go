package memgate

import "github.com/fencegate/fencegate/gate"

// Capability reports fenced write: each resource's highest fence is kept
// atomically with the business change under the resource's lock, for as
// long as the process lives (see the package doc for restarts).
func (g *Gate) Capability() gate.Capability { return gate.CapabilityFencedWrite }
