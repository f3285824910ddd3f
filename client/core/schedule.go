package core

import (
	"time"

	"github.com/fencegate/fencegate/wire"
)

// Due is what a lease's timers ask for at a given instant.
type Due int

// What can be due: nothing, or one of the four below.
const (
	DueNothing  Due = iota
	DueDeadline     // the local deadline passed: stop, then query
	DueRenew        // renew the lease (also refreshes the proof)
	DueRefresh      // only the status proof needs refreshing
	DueQuery        // OWNERSHIP_UNKNOWN: ask the registry again
)

// Schedule is the pure timing of one lease, all instants by the client's
// clock except ProofUntil, which is the registry's validUntil: it is only
// ever compared after subtracting a margin that covers the skew bound.
//
// The clock (docs/guarantees.md, "The lease clock"): a confirmation of a
// renewal sent at s gives the lease the local life L = TTL −
// ExpiryMargin: Deadline = s + L; the next renewal goes at s +
// RenewFraction × L × (1 ± RenewJitter), at most RenewLatestMax × L, and
// its answer is timely only within a quarter of L (LeaseCallTimeout), so
// a renewal answered in time always lands before the deadline.
type Schedule struct {
	Deadline time.Time // no new effects at or after (sent + TTL − ExpiryMargin)
	RenewAt  time.Time // next renewal
	// ProofUntil is how long the lease's HELD evidence lasts (registry
	// clock): the status proof's validUntil, or, after an acquire and
	// before the first renewal or refresh, the grant's own heldUntil.
	// DueRefresh comes ProofRefreshLead before it, so a status proof
	// exists before a grant's held statement runs out.
	ProofUntil time.Time
	// ProofCapped: a refresh since the last renewal moved the proof by
	// less than ProofRefreshLead − ProofMargin. The registry never lets a
	// proof pass the lease's expiry less its skew bound, so such a proof
	// already reaches (about) as far as this renewal lets it: only the
	// next renewal extends it, and no refresh is due before then. Without
	// the mark a refresh would be answered with the same proof, at once,
	// again and again; with it refreshes never come closer together than
	// ProofRefreshLead − ProofMargin.
	ProofCapped bool
	QueryAt     time.Time // next query while unknown
}

// Confirmed computes the schedule after the registry confirmed the grant
// HELD in answer to a renewal (or acquire) sent at sent, whose HELD
// evidence lasts until proofUntil (EvidenceUntil). jitter is drawn from
// the lease's seeded rand in [-1, 1). o must have its defaults filled
// (client.Options.Limits).
func Confirmed(o Limits, sent time.Time, ttl time.Duration, proofUntil time.Time, jitter float64) Schedule {
	life := o.Life(ttl)
	interval := time.Duration(float64(life) * o.RenewFraction * (1 + o.RenewJitter*jitter))
	return Schedule{
		Deadline:   sent.Add(life),
		RenewAt:    sent.Add(interval),
		ProofUntil: proofUntil,
	}
}

// Refreshed keeps the deadline and renewal time and takes newer evidence
// lasting until proofUntil. Evidence that lasts less than ProofRefreshLead
// − ProofMargin longer than the evidence it replaces marks the proof
// capped until the next renewal.
func (s Schedule) Refreshed(o Limits, proofUntil time.Time) Schedule {
	if proofUntil.Sub(s.ProofUntil) < o.ProofRefreshLead-o.ProofMargin {
		s.ProofCapped = true
	}
	s.ProofUntil = proofUntil
	return s
}

// evidenceUntil is how long an answer's HELD evidence lasts (registry
// clock): its statement's validUntil (wire.Issued.Statement).
func evidenceUntil(is wire.Issued) time.Time {
	_, _, until, _ := is.Statement()
	return until
}

// ProofUsable reports whether the status proof may still be sent at now.
func (s Schedule) ProofUsable(o Limits, now time.Time) bool {
	return now.Before(s.ProofUntil.Add(-o.ProofMargin))
}

// refreshAt is when the status proof should be refreshed, and whether a
// refresh can help at all: not once the proof stays usable up to the
// deadline (nothing past the deadline can be used before a renewal, which
// brings its own proof), and not once a refresh brought no later proof
// (ProofCapped).
func (s Schedule) refreshAt(o Limits) (time.Time, bool) {
	useful := !s.ProofCapped && s.ProofUntil.Add(-o.ProofMargin).Before(s.Deadline)
	return s.ProofUntil.Add(-o.ProofRefreshLead), useful
}

// Check returns what is due at now in state st, and when to look again
// (zero when nothing will ever be due). The deadline is checked in every
// state that lets the client produce effects, RENEWING included: a call
// in flight never keeps ownership certain past it.
func (s Schedule) Check(o Limits, st LeaseState, now time.Time) (Due, time.Time) {
	switch st {
	case StateHeld, StateRenewing:
		if !now.Before(s.Deadline) {
			return DueDeadline, now
		}
		if st == StateRenewing {
			return DueNothing, s.Deadline // the call in flight is answered or lost first
		}
		refreshAt, refresh := s.refreshAt(o)
		switch {
		case !now.Before(s.RenewAt):
			return DueRenew, now
		case refresh && !now.Before(refreshAt):
			return DueRefresh, now
		case refresh:
			return DueNothing, earliest(s.Deadline, s.RenewAt, refreshAt)
		}
		return DueNothing, earliest(s.Deadline, s.RenewAt)
	case StateUnknown:
		if !now.Before(s.QueryAt) {
			return DueQuery, now
		}
		return DueNothing, s.QueryAt
	}
	return DueNothing, time.Time{}
}

func earliest(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.Before(m) {
			m = t
		}
	}
	return m
}
