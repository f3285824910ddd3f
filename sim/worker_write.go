package sim

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// writeNext sends the next segment if the lease is certain and the
// operation unfinished.
func (k *worker) writeNext() {
	if !k.certain() || k.inflight != 0 || k.releasing || k.draining {
		return
	}
	if k.ackedSeq >= k.segs {
		k.release()
		return
	}
	// The client's Envelope checks: the local deadline, then the proof.
	now := k.localNow()
	if !now.Before(k.sched.Deadline) {
		k.step(client.EvDeadline)
		k.query()
		return
	}
	if !k.sched.ProofUsable(clientOptions, now) {
		k.refresh()
		return
	}
	seq := k.ackedSeq + 1
	if k.reorderAt == seq && seq < k.segs {
		k.reorderAt = 0
		k.sendSeg(seq+1, payloadDigest(k.opID, seq+1, 0), false) // computed concurrently, sent early
	}
	k.sendSeg(seq, payloadDigest(k.opID, seq, 0), true)
}

// refresh asks for a fresh status proof now, unless a renewal is already
// in flight (its answer resumes the writes).
func (k *worker) refresh() {
	if k.m.State() == client.StateHeld {
		k.step(client.EvRenewDue)
		k.renew(true)
	}
}

// payloadDigest names a segment's payload; variant > 0 is a different
// payload for the same segment.
func payloadDigest(op string, seq uint64, variant byte) grant.Digest {
	var b [9]byte
	binary.LittleEndian.PutUint64(b[:8], seq)
	b[8] = variant
	return sha256.Sum256(append([]byte(op), b[:]...))
}

// sendSeg sends one segment; tracked segments wait for their answer.
func (k *worker) sendSeg(seq uint64, payload grant.Digest, tracked bool) {
	g := k.is.Grant
	m := &gate.Mutation{
		Resource: g.Resource, Lease: g.Lease, OperationID: k.opID, FenceToken: g.FenceToken,
		SegmentSeq: seq, PayloadDigest: payload, Grant: k.grantBytes, GrantProof: k.is.GrantProof,
		Status: k.statusBytes, StatusProof: k.is.StatusProof,
	}
	o := origin{writer: k, buggy: !tracked && payload != payloadDigest(k.opID, seq, 0)}
	k.proofUntilMs = max(k.proofUntilMs, k.is.Status.ValidUntil.UnixMilli())
	tok, inc := 0, k.inc
	if tracked {
		k.ackTok++
		tok, k.inflight = k.ackTok, seq
		k.sentSeq = max(k.sentSeq, seq)
		k.timer(ackTimeoutMs, func() {
			if k.ackTok == tok && k.inflight == seq {
				k.inflight = 0 // MUTATION_UNKNOWN: resend the same segment, same payload
				k.writeNext()
			}
		})
	}
	send := func() {
		k.w.adv.capture(m)
		k.w.send(k.id, pGate, msgWrite, func() {
			out := k.w.res.apply(m, k.name, o)
			k.w.send(pGate, k.id, msgWriteReply, func() {
				k.run(inc, func() { k.onAck(tok, seq, out) })
			})
		})
	}
	k.writes++
	if k.pauseAtWrite == k.writes {
		// Frozen between deciding to write and sending: the classic
		// stale writer. Everything else of this worker waits too.
		k.pausedUntil = k.w.now + k.pauseMs
		k.w.tracef("%s paused %d ms before sending segment %d", k.name, k.pauseMs, seq)
		k.w.at(k.pausedUntil, send)
		return
	}
	send()
}

func (k *worker) onAck(tok int, seq uint64, out gate.Outcome) {
	if tok == 0 || tok != k.ackTok || seq != k.inflight {
		return
	}
	k.inflight = 0
	switch out {
	case gate.Accepted, gate.Replayed:
		k.gapStreak = 0
		k.ackedSeq = max(k.ackedSeq, seq)
		if k.payloadAt == seq {
			k.payloadAt = 0
			k.sendSeg(seq, payloadDigest(k.opID, seq, 1), false)
		}
		if k.ackedSeq >= k.segs {
			k.release()
			return
		}
		k.timer(k.w.rng.between(computeMsMin, computeMsMax), k.writeNext)
	case gate.SegmentGap:
		if k.gapStreak++; k.gapStreak >= gapStreakMax {
			k.gapStreak = 0
			k.release()
			return
		}
		k.timer(computeMsMin, k.writeNext)
	case gate.ProofExpired, gate.NotHeld:
		k.refresh()
	case gate.StaleOwner:
		// A higher fence was accepted: no copy of any write under this
		// grant can ever be accepted. Let it go and start over.
		k.release()
	case gate.FenceRegression, gate.ResourcePaused:
		// The resource waits for an operator: come back much later.
		k.backoffMs = pausedBackoffMs
		k.drainThenRelease()
	default:
		// This grant cannot continue, but the rejection is not final for
		// copies still in the network (a resumed resource, a gap that
		// closes would accept them).
		k.drainThenRelease()
	}
}

// drainThenRelease stops writing and releases only once every status
// proof this grant attached to a write has expired (by the worker's clock,
// with the skew bound): a copy of a rejected write still in the network
// could otherwise be accepted after the release, when the grant is no
// longer the holder. Releasing is not completing the business.
func (k *worker) drainThenRelease() {
	if k.releasing || k.draining {
		return
	}
	if k.w.cfg.NaiveRelease {
		k.release()
		return
	}
	k.draining = true
	wait := k.proofUntilMs + k.w.cfg.SkewBoundMs + proofMarginMs - k.localMs()
	lease := k.is.Grant.Lease
	k.timer(max(wait, 0), func() {
		if k.draining && k.is.Grant != nil && k.is.Grant.Lease == lease {
			k.release()
		}
	})
}
