package core

import (
	"time"

	"github.com/fencegate/fencegate/wire"
)

// Due is what a lease's timers ask for at a given instant.
type Due int

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
type Schedule struct {
	Deadline time.Time // no new effects at or after (sent + TTL − ExpiryMargin)
	RenewAt  time.Time // next renewal
	// ProofUntil is how long the lease's HELD evidence lasts (registry
	// clock): the status proof's validUntil, or, after an acquire and
	// before the first renewal or refresh, the grant's own heldUntil.
	// DueRefresh comes ProofRefreshLead before it, so a status proof
	// exists before a grant's held statement runs out.
	ProofUntil time.Time
	QueryAt    time.Time // next query while unknown
}

// Confirmed computes the schedule after the registry confirmed the grant
// HELD in answer to a renewal (or acquire) sent at sent, whose HELD
// evidence lasts until proofUntil (EvidenceUntil). jitter is drawn from
// the lease's seeded rand in [-1, 1). o must have its defaults filled
// (client.Options.Limits).
func Confirmed(o Limits, sent time.Time, ttl time.Duration, proofUntil time.Time, jitter float64) Schedule {
	interval := time.Duration(float64(ttl) * o.RenewFraction * (1 + o.RenewJitter*jitter))
	return Schedule{
		Deadline:   sent.Add(ttl - o.ExpiryMargin),
		RenewAt:    sent.Add(interval),
		ProofUntil: proofUntil,
	}
}

// Refreshed keeps the deadline and renewal time and takes newer evidence
// lasting until proofUntil.
func (s Schedule) Refreshed(proofUntil time.Time) Schedule {
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

// Check returns what is due at now in state st, and when to look again
// (zero when nothing will ever be due).
func (s Schedule) Check(o Limits, st State, now time.Time) (Due, time.Time) {
	switch st {
	case StateHeld:
		refreshAt := s.ProofUntil.Add(-o.ProofRefreshLead)
		switch {
		case !now.Before(s.Deadline):
			return DueDeadline, now
		case !now.Before(s.RenewAt):
			return DueRenew, now
		case !now.Before(refreshAt):
			return DueRefresh, now
		}
		return DueNothing, earliest(s.Deadline, s.RenewAt, refreshAt)
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
