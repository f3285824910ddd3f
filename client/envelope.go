package client

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// Envelope builds the gate.Mutation for segment segmentSeq (1 for the
// first) of the lease's operation, with the payload's digest: the grant,
// its proof, the latest HELD status proof, the operation ID, the fence and
// the segment, all together.
//
// It refuses with *NotHeldError unless ownership is certain (HELD or
// RENEWING, not releasing) and the local deadline is ahead, and with
// ErrProofStale unless the status proof's validUntil − ProofMargin is
// still ahead by the client's clock. The check is made here, at the
// client's now, not by the background loop: a process that resumes after
// a pause past its TTL is refused before the loop has noticed.
//
// The envelope is self-contained and may be handed to an asynchronous
// worker of the same workload identity (a queue, another goroutine); the
// gate applies exactly the same checks to it whenever it arrives. If it
// waits past its status proof, the worker refreshes it with Refresh.
func (l *Lease) Envelope(segmentSeq uint64, payload grant.Digest) (gate.Mutation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.o.Clock.Now()
	g := l.issued.Grant
	refuse := func(why string) (gate.Mutation, error) {
		return gate.Mutation{}, &NotHeldError{Lease: g.Lease, State: l.m.state, Reason: why}
	}
	switch {
	case !l.m.state.Certain():
		return refuse("ownership not certain")
	case l.releasing:
		return refuse("releasing")
	case !now.Before(l.sched.Deadline):
		l.wake() // the loop will step Deadline and query
		return refuse("local deadline passed")
	case !l.sched.ProofUsable(l.o, now):
		l.wake()
		return gate.Mutation{}, fmt.Errorf("%w: lease %s: status proof valid until %s, margin %s",
			ErrProofStale, g.Lease, l.sched.ProofUntil.UTC().Format(grant.TimeLayout), l.o.ProofMargin)
	}
	m := gate.Mutation{
		Resource: g.Resource, Lease: g.Lease, OperationID: l.operation, FenceToken: g.FenceToken,
		SegmentSeq: segmentSeq, PayloadDigest: payload,
		Grant: g.Encode(), GrantProof: l.issued.GrantProof,
		Status: l.issued.Status.Encode(), StatusProof: l.issued.StatusProof,
	}
	if err := m.Validate(); err != nil {
		return gate.Mutation{}, fmt.Errorf("client: envelope: %w", err)
	}
	return m, nil
}

// Refresh replaces m's status proof with a fresh one from the registry,
// for an envelope that waited in a queue. Fence, root, segment and payload
// are unchanged: a refreshed envelope is the same write. It fails (and m
// is unusable) unless the registry says the same grant is still HELD.
func Refresh(ctx context.Context, t Transport, m gate.Mutation) (gate.Mutation, error) {
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		return gate.Mutation{}, fmt.Errorf("client: refresh: %w", err)
	}
	is, err := t.Status(ctx, g)
	if err != nil {
		return gate.Mutation{}, fmt.Errorf("client: refresh lease %s: %w", g.Lease, err)
	}
	if is.Status == nil || is.Status.Grant != g.Digest() {
		return gate.Mutation{}, fmt.Errorf("%w: refresh lease %s: status about another grant", ErrBadAnswer, g.Lease)
	}
	if is.Status.State != grant.StateHeld {
		return gate.Mutation{}, &NotHeldError{Lease: g.Lease, State: StateExpired, Reason: "registry says " + string(is.Status.State)}
	}
	m.Status, m.StatusProof = is.Status.Encode(), is.StatusProof
	return m, nil
}
