package adapt

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// EvidenceFromProof turns a verified status statement into status
// evidence for gate.Decide.
func EvidenceFromProof(s *grant.Status) gate.StatusEvidence {
	return gate.StatusEvidence{Source: gate.StatusFromProof, State: s.State, IssuerEpoch: s.IssuerEpoch, IssuedAt: s.IssuedAt, ValidUntil: s.ValidUntil}
}

// EvidenceFromGrant turns a grant's own held statement into evidence: HELD
// at IssuedAt, to be relied on until HeldUntil, judged exactly as a status
// proof. A grant without the statement (HeldStatement false) gives
// gate.StatusAbsent.
func EvidenceFromGrant(g *grant.Grant) gate.StatusEvidence {
	if !g.HeldStatement() {
		return gate.StatusEvidence{Source: gate.StatusAbsent}
	}
	return gate.StatusEvidence{Source: gate.StatusFromGrant, State: grant.StateHeld, IssuerEpoch: g.IssuerEpoch, IssuedAt: g.IssuedAt, ValidUntil: g.HeldUntil}
}

// OwnEvidence is the evidence mutation v carries itself, and whether it
// carries any: its status proof when present (a renewal's or a query's
// statement, newer than the grant's), else the grant's held statement.
// An adapter that judges before any I/O (gate.StatusEvidence.ProvesHeld)
// takes it from here, as Decider.DecideLocked does.
func OwnEvidence(v *gate.Verified) (gate.StatusEvidence, bool) {
	if v.Status != nil {
		return EvidenceFromProof(v.Status), true
	}
	ev := EvidenceFromGrant(v.Grant)
	return ev, ev.Source == gate.StatusFromGrant
}

// EvidenceFromQuery turns a querier's answer into evidence; revokedBelow
// is the trust bundle's revokedBelowEpoch.
func EvidenceFromQuery(state grant.State, epoch uint64, err error, revokedBelow uint64) gate.StatusEvidence {
	if err != nil {
		return gate.StatusEvidence{Source: gate.StatusFromQuery, Failure: err.Error()}
	}
	return gate.StatusEvidence{Source: gate.StatusFromQuery, State: state, IssuerEpoch: epoch, EpochRevoked: epoch < revokedBelow}
}

// QueryEvidence asks q about grant g, bounded by timeout, and turns the
// answer into evidence (revokedBelow is the trust bundle's
// revokedBelowEpoch). Adapters call it with the fence row locked (as
// Decider does): for a mutation whose own evidence no longer proves HELD,
// and to settle a decision that asks for confirmation
// (gate.Decision.Confirm).
func QueryEvidence(ctx context.Context, q gate.StatusQuerier, timeout time.Duration, g *grant.Grant, revokedBelow uint64) gate.StatusEvidence {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	state, epoch, err := q.QueryStatus(ctx, g)
	return EvidenceFromQuery(state, epoch, err, revokedBelow)
}
