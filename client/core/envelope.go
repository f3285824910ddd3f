package core

import (
	"fmt"
	"slices"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// envelope builds the gate.Mutation for segment segmentSeq of the
// lease's operation at now — for a set, of its member member, with that
// member's grant and status — with the payload's digest, and records it
// as unsettled until Settle: a drained release waits for unsettled
// envelopes' proofs to lapse (BuildEnvelope says when it refuses).
func (c *Lease) envelope(now time.Time, member int, segmentSeq uint64, payload grant.Digest) (gate.Mutation, error) {
	is, ok := c.member(member)
	if !ok {
		return gate.Mutation{}, fmt.Errorf("client: envelope: %w: member %d of a lease of %d", ErrNoMember, member, max(len(c.set), 1))
	}
	g := is.Grant
	refuse := func(why string) (gate.Mutation, error) {
		return gate.Mutation{}, &NotCertainError{Lease: g.Lease, State: c.m.state, Reason: why}
	}
	switch {
	case !c.m.state.Certain():
		return refuse("state not HELD or RENEWING")
	case c.releasing:
		return refuse("releasing")
	case c.downgraded:
		return refuse("downgraded to a reader")
	case !now.Before(c.sched.Deadline):
		return refuse("local deadline passed")
	case !c.sched.ProofUsable(c.o, now):
		return gate.Mutation{}, fmt.Errorf("%w: lease %s: status proof valid until %s, margin %s",
			ErrProofStale, g.Lease, c.sched.ProofUntil.UTC().Format(grant.TimeLayout), c.o.ProofMargin)
	}
	m := gate.Mutation{
		Resource: g.Resource, Lease: g.Lease, OperationID: c.operation, FenceToken: g.FenceToken,
		SegmentSeq: segmentSeq, PayloadDigest: payload,
		Grant: g.Encode(), GrantProof: is.GrantProof,
		GateProofs: slices.Clone(is.GateProofs),
	}
	// Until the first renewal or refresh, a grant carrying its own HELD
	// statement is the evidence, and the envelope carries no status.
	if st := is.Status; st != nil {
		m.Status, m.StatusProof = st.Encode(), is.StatusProof
	}
	if err := m.Validate(); err != nil {
		return gate.Mutation{}, fmt.Errorf("client: envelope: %w", err)
	}
	if u, k := evidenceUntil(is), (segment{member, segmentSeq}); u.After(c.unsettled[k]) {
		c.unsettled[k] = u
	}
	return m, nil
}

// drainUntil is LeaseView.DrainUntil.
func (c *Lease) drainUntil() time.Time {
	var until time.Time
	for _, u := range c.unsettled {
		if u.After(until) {
			until = u
		}
	}
	if until.IsZero() {
		return until
	}
	return until.Add(c.o.DrainMargin)
}

// beginRelease starts giving the lease up at now (Release says how).
func (c *Lease) beginRelease(now time.Time, drain bool) {
	if c.m.state.Terminal() || c.releasing {
		return
	}
	c.releasing, c.releaseAt = true, now
	if until := c.drainUntil(); drain && until.After(now) {
		c.releaseAt = until
	}
}
