// Package adapt is what an adapter author needs besides package gate: how
// an adapter runs the gate's one decision inside its store's atomic step.
// An adapter (gate/sqlgate, gate/memgate, gate/objgate, gate/redisgate,
// or one of your own over another store) authenticates a mutation with
// gate.Policy.Authenticate, locks the resource's fence state (a row lock,
// a watched key, a conditional write's precondition), runs
// Decider.DecideLocked on it, and stores what the decision says —
// business change, new fence state and receipt — in one atomic step,
// after Decider.CheckStore. Result is what its Apply then returns; the
// operator actions' pure halves (SetModeAction, RaiseMinPolicyAction,
// ResumeAction) are its pause, mode and policy controls.
//
// A service author needs none of this: they configure an adapter with a
// gate.Policy and call its Apply (or Run). An adapter is held to the
// behaviour every adapter must show by testkit/gatetest/conformance.
//
// Nothing here decides: gate.Decide does, and this package only builds
// its input (the status evidence, asking the registry when it must) and
// settles a decision that asks for the registry's word.
package adapt

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/replaced"
	"github.com/fencegate/fencegate/internal/assert"
)

// QueryTimeoutDefault bounds a status query when Decider.QueryTimeout is
// zero: long enough for a registry round trip across a region, short
// enough that a hung registry does not hold a resource locked for long.
const QueryTimeoutDefault = 2 * time.Second

// Decider runs steps 5–6 of the gate's decision as an adapter runs them
// once it holds a resource's fence state locked. Its zero Querier means
// proofs only. A Decider is immutable once used and safe for concurrent
// use.
type Decider struct {
	// Policy authenticates mutations and carries the skew bound the
	// decision judges status by. Required, checked by the adapter
	// (gate.Policy.Check) before its first use.
	Policy gate.Policy
	// Querier answers linearizable status queries with the resource
	// locked: for a mutation whose own evidence no longer proves HELD, and
	// to settle a decision that asks for the registry's word
	// (gate.Decision.Confirm). Optional: nil asks nobody.
	Querier gate.StatusQuerier
	// QueryTimeout bounds one query (the resource stays locked
	// meanwhile). Optional: zero takes QueryTimeoutDefault.
	QueryTimeout time.Duration
}

// DecideLocked is steps 5–6 as every adapter runs them once it holds the
// resource's state st locked, with prior the receipt stored for the
// mutation's (resource, fence, segmentSeq) if any: it builds the status
// evidence only when gate.Decide needs it (the mutation's own proof;
// else its grant's held statement while that proves HELD, or while there
// is no querier; else the querier's answer), decides at now, and settles
// a gate.Decision.Confirm by asking the querier. A query error never
// accepts. It does no other I/O.
func (d *Decider) DecideLocked(ctx context.Context, v *gate.Verified, st gate.FenceState, prior *gate.Receipt, now time.Time) gate.Decision {
	in := gate.Input{Verified: v, State: st, Prior: prior, Now: now, StatusSkewMax: d.Policy.StatusSkewMax}
	if gate.NeedsStatus(in) {
		in.Status = d.evidence(ctx, v, now)
	}
	return d.decideConfirming(ctx, in)
}

// Redecide is gate.Decide (with confirmation) for an input an adapter
// already built, at another instant: for an adapter that decided
// speculatively and must decide again once it holds the lock.
func (d *Decider) Redecide(ctx context.Context, in gate.Input, now time.Time) gate.Decision {
	in.Now = now
	return d.decideConfirming(ctx, in)
}

// decideConfirming is gate.Decide (or a negative control's replacement),
// asking the querier when the decision asks for the registry's word and
// there is one.
func (d *Decider) decideConfirming(ctx context.Context, in gate.Input) gate.Decision {
	decide := replaced.Or(d.Policy.NegativeControl, gate.Decide)
	out := decide(in)
	if out.Confirm && d.Querier != nil {
		ev := d.query(ctx, in.Verified)
		in.Confirm = &ev
		out = decide(in)
	}
	return out
}

// evidence is the status evidence for v at now. A status proof is used as
// it is, fresh or not. A grant's held statement is used while it proves
// HELD; once it no longer does, the querier is asked, and without one the
// statement stands (and gate.Decide rejects it as PROOF_EXPIRED).
func (d *Decider) evidence(ctx context.Context, v *gate.Verified, now time.Time) gate.StatusEvidence {
	ev, own := OwnEvidence(v)
	switch {
	case own && (ev.Source == gate.StatusFromProof || d.Querier == nil || ev.ProvesHeld(now, d.Policy.StatusSkewMax)):
		return ev
	case d.Querier == nil:
		return gate.StatusEvidence{Source: gate.StatusAbsent}
	}
	return d.query(ctx, v)
}

func (d *Decider) query(ctx context.Context, v *gate.Verified) gate.StatusEvidence {
	timeout := d.QueryTimeout
	if timeout <= 0 {
		timeout = QueryTimeoutDefault
	}
	return QueryEvidence(ctx, d.Querier, timeout, v.Grant, d.Policy.Verifier.Bundle().File().RevokedBelowEpoch)
}

// CheckStore is an adapter's half of the fence invariants (gate.Decide
// asserts the other on every decision it returns): called just before it
// writes next over read (the state it decided on, or that an operator
// action acted on), it panics unless next is the same resource's state
// with a highestFence at least read's. A violation is a programmer error
// in the adapter, never an operating one.
//
// A Decider whose policy carries a negative control (gate/gatebreak)
// checks nothing: the control's broken state must reach the simulator's
// checker, which is what the control tests.
func (d *Decider) CheckStore(read, next gate.FenceState) {
	if replaced.Is(d.Policy.NegativeControl) {
		return
	}
	assert.That(next.Resource == read.Resource, "gate: storing the state of %s over that of %s", next.Resource, read.Resource)
	assert.That(next.HighestFence >= read.HighestFence, "gate: storing highestFence %d of %s over %d",
		next.HighestFence, next.Resource, read.HighestFence)
}
