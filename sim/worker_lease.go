package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// This file drives the client's cores as client.Session and client.Lease
// do: it asks a core.Acquire or a core.Lease what to do (Next), carries
// the call over the simulated network, feeds the core its answer (Step:
// Answer, or Lost once a call's timeout passes on the worker's clock),
// and wakes it when it asked to be looked at again. Every decision —
// what to send, how to read an answer, which state follows — is the
// core's.

// start begins the worker's first operation.
func (k *worker) start() {
	if k.started || k.crashed {
		return
	}
	k.started = true
	k.newRequest()
	k.acquire()
}

// newRequest journals a fresh request and operation.
func (k *worker) newRequest() {
	k.reqN++
	k.reqID = fmt.Sprintf("req-%s-%d", k.id, k.reqN)
	k.opID = fmt.Sprintf("op-%s-%d", k.id, k.reqN)
	k.ackedSeq, k.sentSeq = 0, 0
	k.attemptMs = k.w.now
	k.segs = uint64(k.w.rng.between(segmentsMin, segmentsMax))
	k.reqTTLMs = k.drawTTLMs()
}

// acquire starts an acquire of the journalled request, waiting in the
// registry's queue behind the holder.
func (k *worker) acquire() {
	req := wire.AcquireRequest{Resource: k.w.res.name, OperationID: k.opID, OperationClass: "settle",
		RequestID: k.reqID, TTLMs: k.reqTTLMs, WaitMs: acquireWaitMs}
	if k.w.on[FaultLongHold] {
		// Queue for longer than the lease's own TTL, as Session.Lock does
		// behind a long hold.
		req.WaitMs = min(longWaitTTLs*k.reqTTLMs, longWaitMsMax)
	}
	k.acq = core.NewAcquire(k.limits, req, func() float64 { return k.w.rng.float(0, 1) })
	k.driveAcquire()
}

// armWake sets the one live wake timer of the current core.
func (k *worker) armWake(at time.Time, fn func()) {
	k.wakeTok++
	if at.IsZero() {
		return
	}
	tok := k.wakeTok
	k.timerAt(at, func() {
		if k.wakeTok == tok {
			fn()
		}
	})
}

func (k *worker) driveAcquire() {
	a := k.acq
	if a == nil {
		return
	}
	rd := a.Next(k.localNow())
	k.traceTransitions(rd.Transitions)
	if rd.Call.Kind != core.CallNone {
		k.sendAcquireCall(a, rd.Call)
		return
	}
	if rd.Done() {
		k.acq = nil
		k.acquired(rd, k.leaseFrom(a, rd))
		return
	}
	k.armWake(rd.Wake, k.driveAcquire)
}

func (k *worker) traceTransitions(ts []core.Transition) {
	for _, t := range ts {
		k.w.tracef("%s %s --%s--> %s", k.name, t.From, t.Event, t.To)
	}
}

func (k *worker) sendAcquireCall(a *core.Acquire, call core.Call) {
	inc, req := k.inc, call.Request
	var arrived int64 // registry clock: when the call reached the registry
	answer := func(is wire.Issued, err error) {
		k.run(inc, func() {
			if k.acq != a {
				return
			}
			ended := endedGrant(is, err, req.RequestID)
			rd := a.Step(k.localNow(), core.Answer{Call: call, Issued: is, Err: err})
			k.traceTransitions(rd.Transitions)
			if rd.Done() {
				k.answeredSent, k.answeredArrived = call.Sent, arrived
			}
			if rd.NeedsRequestID {
				// The journalled request's grant already ended: rather than
				// go on under a fresh request ID, the worker starts a new
				// operation, as the journal of a careful application would.
				k.acq = nil
				k.lost(ended) // the request's grant already ended: whatever was in flight under it is unknown
				return
			}
			k.driveAcquire()
		})
	}
	var cancel func()
	k.w.send(k.id, pRegistry, msgAcquire, func() {
		arrived = k.w.regClock.atMs(k.w.now)
		reply := func(is wire.Issued, err error) {
			k.w.logCall(msgAcquire, is, err)
			k.w.send(pRegistry, k.id, msgAcquireReply, func() { answer(is, err) })
		}
		if call.Kind == core.CallQueryRequest {
			is, err := k.w.registry().QueryRequest(context.Background(), k.name, req.RequestID)
			reply(is, err)
			return
		}
		cancel = k.w.serveAcquire(k.w.registry(), k.name, req, reply)
	})
	k.timer(call.Timeout.Milliseconds(), func() {
		if cancel != nil {
			// The caller hung up: the registry's side of the call ends.
			k.w.after(k.w.delayMs(), cancel)
		}
		if k.acq == a {
			rd := a.Step(k.localNow(), core.Lost{Call: call}) // ignored if it was answered
			k.traceTransitions(rd.Transitions)
			k.driveAcquire()
		}
	})
}

// endedGrant returns the grant of an answer about request that already
// ended, if that is what the answer is.
func endedGrant(is wire.Issued, err error, request string) *grant.Grant {
	if err != nil || is.Grant == nil || is.Status == nil || is.Grant.RequestID != request || is.Status.State == grant.StateHeld {
		return nil
	}
	return is.Grant
}

// acquired ends an acquire: the lease, or a definite refusal, after which
// the same journalled request is tried again (nothing was granted under
// it) until the worker gives up.
func (k *worker) acquired(rd core.AcquireReady, sent time.Time) {
	if rd.Err != nil {
		if k.w.now > giveUpMs && !k.fencing {
			k.finishOps()
			return
		}
		k.timer(k.w.rng.between(busyRetryMsMin, 2*busyRetryMsMin), k.acquire)
		return
	}
	k.held(rd.Granted.Issued, sent)
}

// held makes the worker the holder under is, whose TTL counts from from
// (worker clock): the lease's core starts.
func (k *worker) held(is wire.Issued, from time.Time) {
	k.w.chk.received(is.Grant.Lease)
	forgot := k.journalLease != "" && k.journalReq == is.Grant.RequestID && is.Grant.Lease != k.journalLease
	if is.Grant.Lease != k.journalLease {
		// A new grant: its segments start at 1.
		k.journalLease, k.journalReq, k.ackedSeq, k.sentSeq = is.Grant.Lease, is.Grant.RequestID, 0, 0
	}
	k.is = is
	k.lease = core.NewLease(k.leaseLimits(is.Grant.TTLMs), core.Granted{Issued: is, OperationID: k.opID, From: from}, func() float64 { return k.w.rng.float(-1, 1) })
	k.checkUsable(is)
	if forgot && !k.w.cfg.NaiveRecovery {
		// The registry answered a journalled request ID with a different
		// grant: it lost its state (a restore). Resuming the operation
		// under the new grant would repeat (fence, root) pairs the gate
		// has seen; abandon the operation and start a new one instead.
		k.w.counts.ClientSawForgottenRequest++
		k.w.tracef("%s: request %s answered with another grant %s: registry state lost", k.name, is.Grant.RequestID, is.Grant.Lease)
		k.release()
		return
	}
	k.w.chk.held(is.Grant.Lease, k.attemptMs, k.id)
	k.w.heldHook(k)
	k.w.tracef("%s HELD fence %d lease %s", k.name, is.Grant.FenceToken, is.Grant.Lease)
	k.driveLease()
	k.writeNext()
}

// checkUsable counts a grant that arrived with its local deadline passed
// although the lease, counted from when the answered request reached the
// registry, still had more than the expiry margin left: time the client's
// own rule threw away. A grant the network made unusable (its request or
// answer delayed for seconds, a crashed worker recovering a lease that is
// all but over) is not counted: no rule could have used it. Nor is a grant
// the registry revived by going backwards: its life is what the restored
// record kept, not the renewals the checker saw committed and the restore
// forgot, and the registry going backwards is counted on its own.
func (k *worker) checkUsable(is wire.Issued) {
	now := k.localNow()
	if now.Before(k.lease.View().Schedule.Deadline) || k.w.chk.revived(is.Grant.Lease) {
		return
	}
	left := time.Duration(k.w.chk.expiresMs(is.Grant.Lease)-k.answeredArrived) * time.Millisecond
	best := k.answeredSent.Add(left - k.limits.ExpiryMargin)
	if now.Before(best.Add(-usableToleranceMs * time.Millisecond)) {
		k.w.chk.unusable(k.name, is.Grant, k.w.now-k.attemptMs)
	}
}

// usableToleranceMs absorbs a worker clock's drift over one wait and TTL
// in checkUsable.
const usableToleranceMs = 20

// driveLease asks the lease's core what to do now. While a call is in
// flight the core names its local deadline, and the worker looks again
// then, beside the call's own timeout: the lease reports the loss at the
// deadline itself.
func (k *worker) driveLease() { k.driveLeaseAfter(nil) }

// driveLeaseAfter is driveLease after a step whose transitions (stepped)
// are booked with the tick's.
func (k *worker) driveLeaseAfter(stepped []core.Transition) {
	l := k.lease
	if l == nil {
		return
	}
	rd := l.Next(k.localNow())
	if k.book(append(stepped, rd.Transitions...)); k.lease != l {
		return // it ended
	}
	wake := rd.Wake
	if rd.Call.Kind != core.CallNone {
		k.sendLeaseCall(l, rd.Call)
		// In flight: only the deadline to watch, while ownership is certain
		// by the machine (a release in flight included; rd.Wake leaves it
		// out), read from the view rather than by ticking the core again.
		wake = time.Time{}
		if v := l.View(); v.State.Certain() && k.w.wakesWhileInFlight() {
			wake = v.Schedule.Deadline
		}
	}
	k.armWake(wake, k.driveLease)
	k.probeDeadline(l)
}

func (k *worker) sendLeaseCall(l *core.Lease, call core.Call) {
	inc, g := k.inc, call.Grant
	kind := msgRenew
	if call.Kind == core.CallRelease {
		kind = msgRelease
	}
	do := func() (wire.Issued, error) {
		ctx, reg := context.Background(), k.w.registry()
		switch call.Kind {
		case core.CallRefresh:
			return reg.Status(ctx, g)
		case core.CallRelease:
			if k.lostRelease && k.w.endsInRound(g, reg) {
				// Answered once decided (Config.ReleaseEarly), its commit
				// then lost: the registry still holds the lease, to its TTL.
				k.lostRelease = false
				k.w.tracef("%s: release of %s answered, its commit lost", k.name, g.Lease)
				return wire.Issued{}, nil
			}
			return wire.Issued{}, reg.Release(ctx, k.name, g.Resource, g.Lease)
		}
		return reg.Renew(ctx, k.name, g.Resource, g.Lease)
	}
	k.w.send(k.id, pRegistry, kind, func() {
		is, err := do()
		k.w.logCall(kind, is, err)
		k.w.send(pRegistry, k.id, kind+1, func() {
			k.run(inc, func() {
				if k.lease == l {
					rd := l.Step(k.localNow(), core.Answer{Call: call, Issued: is, Err: err})
					k.driveLeaseAfter(rd.Transitions)
				}
			})
		})
	})
	if call.Kind == core.CallRelease && k.releaseRace {
		k.releaseRace = false
		k.w.releaseRace(k)
		k.w.after(k.w.rng.between(2000, 10_000), func() { _, _ = do() }) // the same release, re-delivered late
	}
	k.timer(call.Timeout.Milliseconds(), func() {
		if k.lease == l {
			rd := l.Step(k.localNow(), core.Lost{Call: call}) // ignored if it was answered
			k.driveLeaseAfter(rd.Transitions)
		}
	})
}

// book reads the transitions the lease's core made: the OWNERSHIP_UNKNOWN
// books, writes resumed once ownership is certain again, and the lease's
// end.
func (k *worker) book(trans []core.Transition) {
	resume, ended, how := false, false, core.Event("")
	for _, t := range trans {
		if t.From != t.To {
			k.w.tracef("%s %s --%s--> %s", k.name, t.From, t.Event, t.To)
		}
		switch {
		case t.To == core.StateUnknown && t.From != core.StateUnknown:
			k.unknownMs = k.w.now
			k.w.counts.UnknownEntered++
		case t.From == core.StateUnknown && t.To != core.StateUnknown:
			k.resolveUnknown()
		}
		if t.To == core.StateHeld && t.From != core.StateRequested {
			resume = true
		}
		if t.To.Terminal() {
			ended, how = true, t.Event
		}
	}
	if ended {
		k.leaseEnded(how)
		return
	}
	if resume {
		k.writeNext()
	}
}

func (k *worker) resolveUnknown() {
	if k.unknownMs >= 0 {
		k.w.counts.unknownResolved(k.w.now-k.unknownMs, k.w.chk.afterRestore)
		k.unknownMs = -1
	}
}
