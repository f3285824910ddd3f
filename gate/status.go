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

// EvidenceFromProof turns a verified status statement into evidence.
func EvidenceFromProof(s *grant.Status) StatusEvidence {
	return StatusEvidence{Source: StatusFromProof, State: s.State, IssuerEpoch: s.IssuerEpoch, IssuedAt: s.IssuedAt, ValidUntil: s.ValidUntil}
}

// EvidenceFromGrant turns a grant's own held statement into evidence: HELD
// at IssuedAt, to be relied on until HeldUntil, judged exactly as a status
// proof. A grant without the statement (HeldStatement false) gives
// StatusAbsent.
func EvidenceFromGrant(g *grant.Grant) StatusEvidence {
	if !g.HeldStatement() {
		return StatusEvidence{Source: StatusAbsent}
	}
	return StatusEvidence{Source: StatusFromGrant, State: grant.StateHeld, IssuerEpoch: g.IssuerEpoch, IssuedAt: g.IssuedAt, ValidUntil: g.HeldUntil}
}

// OwnEvidence is the evidence the mutation carries itself, and whether it
// carries any: its status proof when present (a renewal's or a query's
// statement, newer than the grant's), else the grant's held statement.
// Adapters that judge before any I/O (ProvesHeld) take it from here, as
// DecideLocked does.
func (v *Verified) OwnEvidence() (StatusEvidence, bool) {
	if v.Status != nil {
		return EvidenceFromProof(v.Status), true
	}
	ev := EvidenceFromGrant(v.Grant)
	return ev, ev.Source == StatusFromGrant
}

// EvidenceFromQuery turns a querier answer into evidence; revokedBelow is
// the trust bundle's revokedBelowEpoch.
func EvidenceFromQuery(state grant.State, epoch uint64, err error, revokedBelow uint64) StatusEvidence {
	if err != nil {
		return StatusEvidence{Source: StatusFromQuery, Failure: err.Error()}
	}
	return StatusEvidence{Source: StatusFromQuery, State: state, IssuerEpoch: epoch, EpochRevoked: epoch < revokedBelow}
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

// QueryEvidence asks q about grant g, bounded by timeout,
// and turns the answer into evidence (revokedBelow is the trust bundle's
// revokedBelowEpoch). Adapters call it with the fence row locked: for a
// mutation without a status proof, and to settle a decision that asks for
// confirmation (Decision.Confirm).
func QueryEvidence(ctx context.Context, q StatusQuerier, timeout time.Duration, g *grant.Grant, revokedBelow uint64) StatusEvidence {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	state, epoch, err := q.QueryStatus(ctx, g)
	return EvidenceFromQuery(state, epoch, err, revokedBelow)
}
