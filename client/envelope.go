package client

import (
	"context"
	"errors"
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
// The envelope counts as unsettled until Settle with a final answer:
// Release waits for an unsettled envelope's proof to lapse before it
// frees the lease. Settle as soon as the resource answers.
//
// The envelope is self-contained and may be handed to an asynchronous
// worker of the same workload identity (a queue, another goroutine); the
// gate applies exactly the same checks to it whenever it arrives. If it
// waits past its status proof, the worker refreshes it with Refresh.
func (l *Lease) Envelope(segmentSeq uint64, payload grant.Digest) (gate.Mutation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, err := l.core.Envelope(l.o.Clock.Now(), segmentSeq, payload)
	var nh *NotHeldError
	if errors.As(err, &nh) && nh.Reason == "local deadline passed" || errors.Is(err, ErrProofStale) {
		l.wake() // the loop will step Deadline and query, or refresh the proof
	}
	return m, err
}

// Settle records the resource's answer to segment segmentSeq of this
// lease's operation (gate.OutcomeOf of what the resource returned): a
// final answer lets Release skip the wait for its proof; a non-final one
// (SEGMENT_GAP, RESOURCE_PAUSED, NOT_HELD) does not, because a copy still
// in the network could be accepted later. Never settle a write whose
// answer was lost.
func (l *Lease) Settle(segmentSeq uint64, answer gate.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.core.Settle(segmentSeq, answer)
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
