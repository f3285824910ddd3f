package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// writeNext sends the next segment if the lease is certain and the
// operation unfinished.
func (k *worker) writeNext() {
	if !k.certain() || k.inflight != 0 || k.holding() {
		return
	}
	if k.ackedSeq >= k.segs {
		k.release()
		return
	}
	seq := k.ackedSeq + 1
	k.effectStarted()
	if k.reorderAt == seq && seq < k.segs {
		k.reorderAt = 0
		k.sendSeg(seq+1, payloadDigest(k.opID, seq+1, 0), false) // computed concurrently, sent early
	}
	k.sendSeg(seq, payloadDigest(k.opID, seq, 0), true)
}

// holding reports whether the worker is in its long hold (FaultLongHold),
// starting it before the first write: its lease's core keeps renewing
// meanwhile, and the writes begin when the hold ends.
func (k *worker) holding() bool {
	if k.holdTTLs > 0 {
		holdMs := min(k.holdTTLs*int64(k.is.Grant.TTLMs), longHoldMsMax)
		k.holdUntil, k.holdTTLs = k.w.now+holdMs, 0
		k.w.chk.heldLong(k.is.Grant.Lease)
		k.w.tracef("%s holds its lease %d ms before writing", k.name, k.holdUntil-k.w.now)
		k.w.after(k.holdUntil-k.w.now, func() { k.run(k.inc, k.writeNext) })
	}
	return k.w.now < k.holdUntil
}

// payloadDigest names a segment's payload; variant > 0 is a different
// payload for the same segment.
func payloadDigest(op string, seq uint64, variant byte) grant.Digest {
	var b [9]byte
	binary.LittleEndian.PutUint64(b[:8], seq)
	b[8] = variant
	return sha256.Sum256(append([]byte(op), b[:]...))
}

// sendSeg builds the envelope through the lease's core and sends it;
// tracked segments wait for their answer. A refused envelope (the local
// deadline passed, or the proof needs a refresh) is the core's to handle:
// driveLease steps the deadline or refreshes, and a confirmation resumes
// the writes.
func (k *worker) sendSeg(seq uint64, payload grant.Digest, tracked bool) {
	rd := k.lease.Step(k.localNow(), core.BuildEnvelope{Segment: seq, Payload: payload})
	env, err := rd.Envelope, rd.Err
	if err != nil {
		var nh *client.NotCertainError
		if tracked && (errors.As(err, &nh) || errors.Is(err, client.ErrProofStale)) {
			k.driveLease()
		}
		return
	}
	m := &env
	if k.w.cfg.StatusQuery {
		// The gate asks the registry itself: the envelope carries no
		// proof for it to trust instead (gatetest.WithoutStatus).
		m.Status, m.StatusProof = nil, ""
	}
	o := origin{writer: k, buggy: !tracked && payload != payloadDigest(k.opID, seq, 0)}
	tok, inc, l := 0, k.inc, k.lease
	k.writes++
	late := tracked && k.lateCopy && seq == k.segs
	if tracked {
		k.ackTok++
		tok, k.inflight = k.ackTok, seq
		k.sentSeq = max(k.sentSeq, seq)
		if !late {
			k.timer(ackTimeoutMs, func() {
				if k.ackTok == tok && k.inflight == seq {
					k.inflight = 0 // MUTATION_UNKNOWN: resend the same segment, same payload
					k.writeNext()
				}
			})
		}
	}
	send := func() {
		k.w.adv.capture(m)
		k.w.send(k.id, pGate, msgWrite, func() {
			out, answered := k.w.res.apply(m, k.name, o)
			if !answered {
				return // the store failed: the service answers nothing, as on a lost answer
			}
			k.w.send(pGate, k.id, msgWriteReply, func() {
				k.run(inc, func() { k.onAck(l, tok, seq, out) })
			})
		})
	}
	if late {
		// The last segment's original is held back in the network until
		// the next owner has written, and the worker lets the lease go
		// without waiting for its answer: the late copy after a release.
		k.lateCopy = false
		k.w.holdCopy(k, func() { k.w.adv.capture(m); k.w.res.apply(m, k.name, o) })
		// Without the drain only if this is the one unanswered write, so
		// that nothing else of this grant can land after the release.
		k.w.tracef("%s sends segment %d (held back in the network) and releases without waiting", k.name, seq)
		k.releaseWith(k.lease.View().Unsettled > 1)
		return
	}
	if k.pauseAtWrite == k.writes {
		// Frozen between deciding to write and sending: the classic
		// stale writer. Everything else of this worker waits too.
		pauseMs := int64(k.lease.View().Issued.Grant.TTLMs) + k.pauseOverMs
		k.pausedUntil = k.w.now + pauseMs
		k.w.tracef("%s paused %d ms before sending segment %d", k.name, pauseMs, seq)
		k.w.at(k.pausedUntil, send)
		return
	}
	send()
}

// onAck reads the resource's answer to a tracked segment.
func (k *worker) onAck(l *core.Lease, tok int, seq uint64, out gate.Outcome) {
	if l != nil && k.lease == l {
		l.Step(k.localNow(), core.Settle{Segment: seq, Outcome: out}) // the core decides whether this answer lets the release skip its proof
	}
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
		k.driveLease() // a refresh or a renewal is due; its confirmation resumes the writes
		k.timer(computeMsMin, k.writeNext)
	case gate.FenceRegression, gate.ResourcePaused:
		// The resource waits for an operator: come back much later.
		k.backoffMs = pausedBackoffMs
		k.release()
	default:
		// A higher fence was accepted, or this grant cannot continue.
		// Release drains: copies of writes whose answers were not final
		// may still be in the network.
		k.release()
	}
}
