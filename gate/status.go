package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
)

// StatusQuerier asks the canonical registry, linearizably, for a grant's
// current state. The gate calls it with the resource's fence row locked,
// so a HELD answer is ordered after the highestFence the decision compares
// against. An error means "cannot prove HELD": the gate never accepts on
// it (outcome NOT_HELD, or STALE_OWNER for a fence below highestFence).
// Implementations bound their own latency with ctx.
type StatusQuerier interface {
	QueryStatus(ctx context.Context, g *grant.Grant) (state grant.State, issuerEpoch uint64, err error)
}

// QuerierFunc adapts a function to StatusQuerier.
type QuerierFunc func(ctx context.Context, g *grant.Grant) (grant.State, uint64, error)

// QueryStatus calls f.
func (f QuerierFunc) QueryStatus(ctx context.Context, g *grant.Grant) (grant.State, uint64, error) {
	return f(ctx, g)
}

// StatusSource says where status evidence came from.
type StatusSource string

// Status sources.
const (
	StatusAbsent    StatusSource = "absent" // neither a proof nor a querier
	StatusFromProof StatusSource = "proof"  // a verified grantStatus.v1 in the mutation
	StatusFromQuery StatusSource = "query"  // a StatusQuerier answer
	// StatusFromGrant is the grant's own held statement (lockGrant.v1
	// with heldUntil), for a mutation that carries no status proof.
	StatusFromGrant StatusSource = "grant"
)

// StatusEvidence is what the gate knows about the grant's current state.
// Decide judges it against the gate's clock; building it does no I/O
// beyond the querier call.
type StatusEvidence struct {
	Source      StatusSource
	State       grant.State
	IssuerEpoch uint64
	// IssuedAt is when the registry made the statement (registry clock;
	// proof and grant only: a held-form grant states HELD at its own
	// IssuedAt). A statement says HELD at IssuedAt, not "still the
	// newest": the regression rule compares it with the issue time of the
	// grant at highestFence.
	IssuedAt time.Time
	// ValidUntil is the registry's validity bound (proof: validUntil;
	// grant: heldUntil).
	ValidUntil time.Time
	// EpochRevoked: query only, the answer's epoch is revoked by the bundle.
	EpochRevoked bool
	Failure      string // query only: why the query gave no answer
}

// ProvesHeld reports whether e proves the grant HELD at now under the
// skew bound: whether Decide's status step passes. Adapters use it to
// decide before any I/O whether an accept is possible at all.
func (e StatusEvidence) ProvesHeld(now time.Time, skew time.Duration) bool {
	code, _ := e.judge(now, skew)
	return code == ""
}

// judge returns "" when the evidence proves the grant HELD at now, or the
// outcome and reason why it does not.
func (e StatusEvidence) judge(now time.Time, skew time.Duration) (Outcome, string) {
	switch {
	case e.Source == StatusAbsent || e.Source == "":
		return NotHeld, "no status proof and no status querier configured"
	case e.Failure != "":
		return NotHeld, "status query failed: " + e.Failure
	case e.EpochRevoked:
		return EpochRevoked, fmt.Sprintf("status issuer epoch %d is revoked", e.IssuerEpoch)
	case e.State != grant.StateHeld:
		return NotHeld, fmt.Sprintf("grant is %s (status %s)", e.State, e.Source)
	case (e.Source == StatusFromProof || e.Source == StatusFromGrant) && !now.Add(skew).Before(e.ValidUntil):
		what := "status proof valid until"
		if e.Source == StatusFromGrant {
			what = "no status proof, and the grant's held statement is valid until"
		}
		return ProofExpired, fmt.Sprintf("%s %s, gate clock %s + skew bound %s",
			what, e.ValidUntil.UTC().Format(grant.TimeLayout), now.UTC().Format(grant.TimeLayout), skew)
	}
	return "", ""
}
