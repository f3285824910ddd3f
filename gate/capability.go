package gate

import (
	"errors"
	"fmt"
)

// Capability is what a downstream target offers to keep a superseded
// owner's effect out. Every adapter declares one; nothing is assumed.
type Capability string

// Capabilities, strongest first.
const (
	// CapabilityFencedWrite: the target stores the highest fence it has
	// accepted atomically with each effect and refuses a lower one
	// (gate/sqlgate on SQLite and PostgreSQL; a job target behind
	// sqlgate). Only such a target can run in shadow or enforce mode.
	CapabilityFencedWrite Capability = "fenced-write"
	// CapabilityEffectQuery: the target cannot refuse a stale caller, but
	// it honours a stable key per effect and answers whether the effect of
	// a key happened (a third-party API with idempotency keys and a lookup
	// by key or operation ID). MUTATION_UNKNOWN can be resolved; a stale
	// owner's call cannot be refused.
	CapabilityEffectQuery Capability = "effect-query"
	// CapabilityNone: the target receives "locked=true" at best.
	CapabilityNone Capability = "none"
)

// Use is how a target without fenced-write capability may be used: the
// specification's two allowed uses.
type Use string

// Allowed uses of a target without fenced-write capability.
const (
	// UseSingleWriter: the architecture guarantees one writer to the
	// target (one process, by deployment, not by a lease).
	UseSingleWriter Use = "single-writer"
	// UseIdempotentCompensable: each operation is narrow, idempotent
	// under its key, and can be compensated if a superseded owner's call
	// lands late.
	UseIdempotentCompensable Use = "idempotent-compensable"
)

// ErrNoFencedWrite is returned when a target without fenced-write
// capability is configured in shadow or enforce mode, or with no allowed
// use declared.
var ErrNoFencedWrite = errors.New("gate: target has no fenced-write capability")

// TargetSpec is what a caller declares about one downstream target.
type TargetSpec struct {
	Name       string     // for the error message, e.g. "payments-api"
	Capability Capability // what the adapter declares
	Mode       Mode       // "" for none; shadow and enforce need fenced-write
	Use        Use        // required when Capability is not fenced-write
}

// CheckTarget refuses a configuration that assumes a capability the
// target lacks: shadow or enforce mode on a target without fenced-write
// capability (its errors wrap ErrNoFencedWrite and name the two allowed
// uses), or such a target with no allowed use declared. A fenced-write
// target may declare a mode and needs no use.
func CheckTarget(t TargetSpec) error {
	switch t.Capability {
	case CapabilityFencedWrite:
		if t.Mode != "" {
			if _, err := ParseMode(string(t.Mode)); err != nil {
				return err
			}
		}
		return nil
	case CapabilityEffectQuery, CapabilityNone:
	default:
		return fmt.Errorf("gate: target %q: capability %q (want %s, %s or %s)", t.Name, t.Capability,
			CapabilityFencedWrite, CapabilityEffectQuery, CapabilityNone)
	}
	allowed := fmt.Sprintf("without it a target may only be used in a single-writer architecture (%s) or for idempotent, compensable narrow operations (%s)",
		UseSingleWriter, UseIdempotentCompensable)
	if t.Mode != "" {
		return fmt.Errorf("%w: %s mode refused on target %q: its capability is %s, not %s (an atomic store of the highest fence); %s",
			ErrNoFencedWrite, t.Mode, t.Name, t.Capability, CapabilityFencedWrite, allowed)
	}
	switch t.Use {
	case UseSingleWriter, UseIdempotentCompensable:
		return nil
	}
	return fmt.Errorf("%w: target %q (capability %s) declares use %q; %s",
		ErrNoFencedWrite, t.Name, t.Capability, t.Use, allowed)
}
