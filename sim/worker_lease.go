package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// This file drives the client's cores: it carries the calls an
// AcquireCore or a LeaseCore asks for over the simulated network, gives
// them their answers (or Lost once a call's timeout passes on the
// worker's clock), and wakes them when they asked to be looked at again.
// Every decision — what to send, how to read an answer, which state
// follows — is the core's.

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
	k.acq = core.NewAcquire(k.limits, req, k.nextRequestID, func() float64 { return k.w.rng.float(0, 1) })
	k.driveAcquire()
}

// nextRequestID is what the AcquireCore draws when the registry answers
// that the journalled request's grant already ended. The worker notices
// the switch after the answer and starts a new operation instead
// (lostRequest), as the journal of a careful application would.
func (k *worker) nextRequestID() string { return k.reqID + "-superseded" }

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
	call, wake := a.Next(k.localNow())
	for _, t := range a.Transitions() {
		k.w.tracef("%s %s --%s--> %s", k.name, t.From, t.Event, t.To)
	}
	if call.Kind != core.CallNone {
		k.sendAcquireCall(a, call)
		return
	}
	if done, is, err := a.Done(); done {
		k.acq = nil
		k.acquired(is, err, k.leaseFrom(a))
		return
	}
	k.armWake(wake, k.driveAcquire)
}

func (k *worker) sendAcquireCall(a *core.Acquire, call core.Call) {
	inc, req := k.inc, a.Request()
	var arrived int64 // registry clock: when the call reached the registry
	answer := func(is wire.Issued, err error) {
		k.run(inc, func() {
			if k.acq != a {
				return
			}
			ended := endedGrant(is, err, req.RequestID)
			a.Answer(k.localNow(), call, is, err)
			if done, _, _ := a.Done(); done {
				k.answeredSent, k.answeredArrived = call.Sent, arrived
			}
			if a.Request().RequestID != req.RequestID {
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
			a.Lost(k.localNow(), call) // ignored if it was answered
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
func (k *worker) acquired(is wire.Issued, err error, sent time.Time) {
	if err != nil {
		if k.w.now > giveUpMs && !k.fencing {
			k.finishOps()
			return
		}
		k.timer(k.w.rng.between(busyRetryMsMin, 2*busyRetryMsMin), k.acquire)
		return
	}
	k.held(is, sent)
}

// held makes the worker the holder under is, whose TTL counts from from
// (worker clock): the lease's core starts.
func (k *worker) held(is wire.Issued, from time.Time) {
	forgot := k.journalLease != "" && k.journalReq == is.Grant.RequestID && is.Grant.Lease != k.journalLease
	if is.Grant.Lease != k.journalLease {
		// A new grant: its segments start at 1.
		k.journalLease, k.journalReq, k.ackedSeq, k.sentSeq = is.Grant.Lease, is.Grant.RequestID, 0, 0
	}
	k.is = is
	k.lease = core.NewLease(k.leaseLimits(is.Grant.TTLMs), is, k.opID, from, func() float64 { return k.w.rng.float(-1, 1) })
	k.checkUsable(is)
	k.book()
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
	if now.Before(k.lease.Schedule().Deadline) || k.w.chk.revived(is.Grant.Lease) {
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
func (k *worker) driveLease() {
	l := k.lease
	if l == nil {
		return
	}
	call, wake := l.Next(k.localNow())
	if k.book(); k.lease != l {
		return // it ended
	}
	if call.Kind != core.CallNone {
		k.sendLeaseCall(l, call)
		_, wake = l.Next(k.localNow()) // in flight: only the deadline to watch
		if !k.w.wakesWhileInFlight() {
			wake = time.Time{}
		}
	}
	k.armWake(wake, k.driveLease)
	k.probeDeadline(l)
}

func (k *worker) sendLeaseCall(l *core.Lease, call core.Call) {
	inc, g := k.inc, l.Grant()
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
					l.Answer(k.localNow(), call, is, err)
					k.driveLease()
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
			l.Lost(k.localNow(), call) // ignored if it was answered
			k.driveLease()
		}
	})
}

// book reads the transitions the lease's core made: the OWNERSHIP_UNKNOWN
// books, writes resumed once ownership is certain again, and the lease's
// end.
func (k *worker) book() {
	l := k.lease
	resume, ended, how := false, false, client.Event("")
	for _, t := range l.Transitions() {
		if t.From != t.To {
			k.w.tracef("%s %s --%s--> %s", k.name, t.From, t.Event, t.To)
		}
		switch {
		case t.To == client.StateUnknown && t.From != client.StateUnknown:
			k.unknownMs = k.w.now
			k.w.counts.UnknownEntered++
		case t.From == client.StateUnknown && t.To != client.StateUnknown:
			k.resolveUnknown()
		}
		if t.To == client.StateHeld && t.From != client.StateRequested {
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
