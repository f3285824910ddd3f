package client

import (
	"time"

	"github.com/fencegate/fencegate/grant"
)

// due is what a lease's timers ask for at a given instant.
type due int

const (
	dueNothing  due = iota
	dueDeadline     // the local deadline passed: stop, then query
	dueRenew        // renew the lease (also refreshes the proof)
	dueRefresh      // only the status proof needs refreshing
	dueQuery        // OWNERSHIP_UNKNOWN: ask the registry again
)

// schedule is the pure timing of one lease, all instants by the client's
// clock except proofUntil, which is the registry's validUntil: it is only
// ever compared after subtracting a margin that covers the skew bound.
type schedule struct {
	deadline   time.Time // no new effects at or after (sent + TTL − ExpiryMargin)
	renewAt    time.Time // next renewal
	proofUntil time.Time // status proof validUntil (registry clock)
	queryAt    time.Time // next query while unknown
}

// confirmed computes the schedule after the registry confirmed the grant
// HELD in answer to a renewal (or acquire) sent at sent. jitter is drawn
// from the lease's seeded rand in [-1, 1).
func confirmed(o Options, sent time.Time, ttl time.Duration, st *grant.Status, jitter float64) schedule {
	interval := time.Duration(float64(ttl) * o.RenewFraction * (1 + o.RenewJitter*jitter))
	return schedule{
		deadline:   sent.Add(ttl - o.ExpiryMargin),
		renewAt:    sent.Add(interval),
		proofUntil: st.ValidUntil,
	}
}

// refreshed keeps the deadline and renewal time and takes a newer proof.
func (s schedule) refreshed(st *grant.Status) schedule {
	s.proofUntil = st.ValidUntil
	return s
}

// proofUsable reports whether the status proof may still be sent at now.
func (s schedule) proofUsable(o Options, now time.Time) bool {
	return now.Before(s.proofUntil.Add(-o.ProofMargin))
}

// check returns what is due at now in state st, and when to look again
// (zero when nothing will ever be due).
func (s schedule) check(o Options, st State, now time.Time) (due, time.Time) {
	switch st {
	case StateHeld:
		refreshAt := s.proofUntil.Add(-o.ProofRefreshLead)
		switch {
		case !now.Before(s.deadline):
			return dueDeadline, now
		case !now.Before(s.renewAt):
			return dueRenew, now
		case !now.Before(refreshAt):
			return dueRefresh, now
		}
		return dueNothing, earliest(s.deadline, s.renewAt, refreshAt)
	case StateUnknown:
		if !now.Before(s.queryAt) {
			return dueQuery, now
		}
		return dueNothing, s.queryAt
	}
	return dueNothing, time.Time{}
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
