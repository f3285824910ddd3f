package gate

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/gate/internal/seam"
)

// The negative controls' one way to replace Decide (gate/gatebreak).
func init() {
	seam.Install(func(p Policy, d func(Input) Decision) Policy {
		p.decide = d
		return p
	})
}

// Querying is how an adapter reaches the canonical registry for status:
// optional (a nil Querier means proofs only).
type Querying struct {
	// Querier answers linearizable status queries; nil: none configured.
	Querier StatusQuerier
	// Timeout bounds one query (the resource stays locked meanwhile).
	// Optional: zero takes QueryTimeoutDefault.
	Timeout time.Duration
}

// QueryTimeoutDefault bounds a status query when Querying.Timeout is
// zero: long enough for a registry round trip across a region, short
// enough that a hung registry does not hold a resource locked for long.
const QueryTimeoutDefault = 2 * time.Second

// DecideLocked is steps 5–6 as every adapter runs them once it holds the
// resource's state locked (a row lock, a watched key, a conditional
// write's precondition): it builds the status evidence only when Decide
// needs it (the mutation's own proof; else its grant's held statement
// while that proves HELD, or while there is no querier; else the
// querier's answer), decides
// at now, and settles a Decision.Confirm by asking the querier. A query
// error never accepts. It does no other I/O.
func (p *Policy) DecideLocked(ctx context.Context, q Querying, v *Verified, st FenceState, prior *Receipt, now time.Time) Decision {
	in := Input{Verified: v, State: st, Prior: prior, Now: now, StatusSkewMax: p.StatusSkewMax}
	if NeedsStatus(in) {
		in.Status = p.evidence(ctx, q, v, now)
	}
	return p.decideConfirming(ctx, q, in)
}

// decideConfirming is Decide, asking q when the decision asks for the
// registry's word and q has a querier.
func (p *Policy) decideConfirming(ctx context.Context, q Querying, in Input) Decision {
	decide := Decide
	if p.decide != nil {
		decide = p.decide
	}
	d := decide(in)
	if d.Confirm && q.Querier != nil {
		ev := p.query(ctx, q, in.Verified)
		in.Confirm = &ev
		d = decide(in)
	}
	return d
}

// Redecide is Decide (with confirmation) for an input an adapter already
// built, at another instant: for an adapter that decided speculatively
// and must decide again once it holds the lock.
func (p *Policy) Redecide(ctx context.Context, q Querying, in Input, now time.Time) Decision {
	in.Now = now
	return p.decideConfirming(ctx, q, in)
}

// evidence is the status evidence for v at now. A status proof is used as
// it is, fresh or not (as before held-form grants). A grant's held
// statement is used while it proves HELD; once it no longer does, a
// querier is asked, and without one the statement stands (and Decide
// rejects it as PROOF_EXPIRED).
func (p *Policy) evidence(ctx context.Context, q Querying, v *Verified, now time.Time) StatusEvidence {
	ev, own := v.OwnEvidence()
	switch {
	case own && (ev.Source == StatusFromProof || q.Querier == nil || ev.ProvesHeld(now, p.StatusSkewMax)):
		return ev
	case q.Querier == nil:
		return StatusEvidence{Source: StatusAbsent}
	}
	return p.query(ctx, q, v)
}

func (p *Policy) query(ctx context.Context, q Querying, v *Verified) StatusEvidence {
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = QueryTimeoutDefault
	}
	return QueryEvidence(ctx, q.Querier, timeout, v.Grant, p.Verifier.Bundle().File().RevokedBelowEpoch)
}
