package core

import (
	"fmt"
	"slices"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// Envelope builds the gate.Mutation for segment segmentSeq of the lease's
// operation at now, with the payload's digest, and records it as
// unsettled until Settle: Release waits for unsettled envelopes' proofs
// to lapse. It refuses with *NotHeldError unless ownership is certain and
// the local deadline is ahead (the driver should then look at Next: the
// deadline is due), and with ErrProofStale unless the status proof's
// validUntil − ProofMargin is still ahead (a refresh is due).
func (c *Lease) Envelope(now time.Time, segmentSeq uint64, payload grant.Digest) (gate.Mutation, error) {
	g := c.issued.Grant
	refuse := func(why string) (gate.Mutation, error) {
		return gate.Mutation{}, &NotHeldError{Lease: g.Lease, State: c.m.state, Reason: why}
	}
	switch {
	case !c.m.state.Certain():
		return refuse("ownership not certain")
	case c.releasing:
		return refuse("releasing")
	case !now.Before(c.sched.Deadline):
		return refuse("local deadline passed")
	case !c.sched.ProofUsable(c.o, now):
		return gate.Mutation{}, fmt.Errorf("%w: lease %s: status proof valid until %s, margin %s",
			ErrProofStale, g.Lease, c.sched.ProofUntil.UTC().Format(grant.TimeLayout), c.o.ProofMargin)
	}
	m := gate.Mutation{
		Resource: g.Resource, Lease: g.Lease, OperationID: c.operation, FenceToken: g.FenceToken,
		SegmentSeq: segmentSeq, PayloadDigest: payload,
		Grant: g.Encode(), GrantProof: c.issued.GrantProof,
		GateProofs: slices.Clone(c.issued.GateProofs),
	}
	// Until the first renewal or refresh, a grant carrying its own HELD
	// statement is the evidence, and the envelope carries no status.
	if st := c.issued.Status; st != nil {
		m.Status, m.StatusProof = st.Encode(), c.issued.StatusProof
	}
	if err := m.Validate(); err != nil {
		return gate.Mutation{}, fmt.Errorf("client: envelope: %w", err)
	}
	if u := evidenceUntil(c.issued); u.After(c.unsettled[segmentSeq]) {
		c.unsettled[segmentSeq] = u
	}
	return m, nil
}

// Settle records the resource's answer to segment segmentSeq. A final
// answer (gate.Outcome.Final: accepted, replayed, or a rejection no copy
// can ever escape) settles it, so Release need not wait for its proof; a
// non-final one (SEGMENT_GAP, RESOURCE_PAUSED, NOT_HELD) leaves it
// unsettled, because a copy still in the network could be accepted later.
// A write whose answer was lost must not be settled at all.
func (c *Lease) Settle(segmentSeq uint64, answer gate.Outcome) {
	if answer.Final() {
		delete(c.unsettled, segmentSeq)
	}
}

// Forget drops segment segmentSeq's envelope from what Release waits for:
// it never left the process and cannot be sent again (a gate in the
// worker's own process rolled the write back because the worker's own
// business change failed).
func (c *Lease) Forget(segmentSeq uint64) { delete(c.unsettled, segmentSeq) }

// Unsettled returns how many envelopes await an answer.
func (c *Lease) Unsettled() int { return len(c.unsettled) }

// DrainUntil is the instant (client clock) after which no unsettled
// envelope's status proof can still be accepted by a gate: the latest
// validUntil attached to one, plus DrainMargin for the skew between the
// registry's clock and the client's and the gate's. Zero when every
// envelope is settled.
func (c *Lease) DrainUntil() time.Time {
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

// BeginRelease starts giving the lease up at now: from here on ownership
// is not certain (envelopes are refused, no renewal is sent). With drain,
// the release is sent once DrainUntil has passed: a status proof outlives
// a release, so a copy of an unsettled write could otherwise be accepted
// after the registry let the lease go and before the next owner writes.
// Without drain it is sent at once. It reports whether it began (false
// for a lease already ended or releasing).
func (c *Lease) BeginRelease(now time.Time, drain bool) bool {
	if c.m.state.Terminal() || c.releasing {
		return false
	}
	c.releasing, c.releaseAt = true, now
	if until := c.DrainUntil(); drain && until.After(now) {
		c.releaseAt = until
	}
	return true
}

// ReleaseAt is when the release will be sent (zero unless releasing).
func (c *Lease) ReleaseAt() time.Time { return c.releaseAt }
