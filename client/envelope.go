package client

import (
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// Envelope builds the gate.Mutation for segment segmentSeq (1 for the
// first) of the lease's operation, with the payload's digest: the grant,
// its proof, the latest HELD status proof, the operation ID, the fence and
// the segment, all together.
//
// It refuses with *NotCertainError unless ownership is certain (HELD or
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
// waits past its status proof, the holder refreshes it with Refresh.
func (l *Lease) Envelope(segmentSeq uint64, payload grant.Digest) (gate.Mutation, error) {
	rd := l.step(core.BuildEnvelope{Member: l.member, Segment: segmentSeq, Payload: payload})
	var nc *NotCertainError
	if errors.As(rd.Err, &nc) && nc.Reason == "local deadline passed" || errors.Is(rd.Err, ErrProofStale) {
		l.wake() // the loop will step Deadline and query, or refresh the proof
	}
	return rd.Envelope, rd.Err
}

// Settle records the resource's answer to segment segmentSeq of this
// lease's operation (gate.OutcomeOf of what the resource returned): a
// final answer lets Release skip the wait for its proof; a non-final one
// (SEGMENT_GAP, RESOURCE_PAUSED, NOT_HELD) does not, because a copy still
// in the network could be accepted later. Never settle a write whose
// answer was lost.
func (l *Lease) Settle(segmentSeq uint64, answer gate.Outcome) {
	l.step(core.Settle{Member: l.member, Segment: segmentSeq, Outcome: answer})
}

// Refresh rebuilds m, an envelope of this lease that waited (in a queue,
// for a retry) past its status proof, with the lease's current proof:
// the same resource, lease, operation, fence, segment and payload, so the
// same write. Like Envelope it refuses unless ownership is certain, and it
// counts the new proof in the release's drain: Release waits until no
// copy of m, old or refreshed, can still be accepted. It fails with
// ErrForeignEnvelope when m is not an envelope of this lease's operation.
//
// Only the lease's holder can refresh: a status proof fetched by anyone
// else would outlive the drain, and a copy carrying it could be accepted
// after the release. A worker that cannot reach the lease hands its work
// on as a job instead (gate.DecideJob, downstream/riverhop).
func (l *Lease) Refresh(m gate.Mutation) (gate.Mutation, error) {
	g := l.Grant()
	if m.Lease != g.Lease || m.Resource != g.Resource || m.FenceToken != g.FenceToken || m.OperationID != l.OperationID() {
		return gate.Mutation{}, fmt.Errorf("%w: lease %s fence %d operation %q, this lease %s fence %d operation %q",
			ErrForeignEnvelope, m.Lease, m.FenceToken, m.OperationID, g.Lease, g.FenceToken, l.OperationID())
	}
	return l.Envelope(m.SegmentSeq, m.PayloadDigest)
}

// forget drops segmentSeq's envelope from the release's drain: it never
// left the process (core.Forget).
func (l *Lease) forget(segmentSeq uint64) { l.step(core.Forget{Member: l.member, Segment: segmentSeq}) }
