package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// clientOptions are the client's own defaults, with the call timeout the
// simulated network's round trips call for (the client caps it at TTL/4
// anyway). The Rand is never drawn from: the worker passes the jitter it
// draws from the round's PRNG.
var clientOptions = client.Options{
	CallTimeout: callTimeoutMs * time.Millisecond,
	Rand:        rand.New(rand.NewPCG(0, 0)),
}.WithDefaults()

func (k *worker) certain() bool { return k.m.State().Certain() }

// step feeds ev to the client's machine and keeps the UNKNOWN books.
func (k *worker) step(ev client.Event) client.State {
	from := k.m.State()
	to, _ := k.m.Step(ev)
	if to == client.StateUnknown && from != client.StateUnknown {
		k.unknownMs = k.w.now
		k.w.counts.UnknownEntered++
	}
	if from == client.StateUnknown && to != client.StateUnknown {
		k.resolveUnknown()
	}
	if from != to {
		k.w.tracef("%s %s --%s--> %s", k.name, from, ev, to)
	}
	return to
}

func (k *worker) resolveUnknown() {
	if k.unknownMs >= 0 {
		k.w.counts.unknownResolved(k.w.now - k.unknownMs)
		k.unknownMs = -1
	}
}

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
	k.m = client.NewMachine()
}

// acquire sends (or re-sends, same request ID) the acquire.
func (k *worker) acquire() {
	k.callTok++
	tok, inc, req := k.callTok, k.inc, registry.AcquireRequest{
		Resource: k.w.res.name, OperationID: k.opID, OperationClass: "settle", RequestID: k.reqID, TTLMs: leaseTTLMs,
	}
	sent := k.localNow()
	k.w.send(k.id, pRegistry, msgAcquire, func() {
		is, err := k.w.reg.Acquire(context.Background(), k.name, req)
		k.w.logCall(msgAcquire, is, err)
		k.w.send(pRegistry, k.id, msgAcquireReply, func() {
			k.run(inc, func() { k.onAcquire(tok, sent, is, err) })
		})
	})
	k.timer(callTimeoutMs, func() {
		if k.callTok == tok && k.m.State() == client.StateRequested {
			k.step(client.EvAcquireLost)
			k.acquire() // lost: retry with the same request ID
		}
	})
}

func (k *worker) onAcquire(tok int, sent time.Time, is registry.Issued, err error) {
	if tok != k.callTok || k.m.State() != client.StateRequested {
		return
	}
	k.callTok++
	switch {
	case err != nil:
		if k.w.now > giveUpMs && !k.fencing {
			k.finishOps()
			return
		}
		k.timer(k.w.rng.between(busyRetryMsMin, 2*busyRetryMsMin), k.acquire)
	case is.Status.State == grant.StateHeld:
		k.step(client.EvAcquireOK)
		k.held(is, sent)
	default:
		// The request's grant already ended (a retry after a crash, or a
		// late answer): whatever was in flight under it is unknown.
		k.lost(is.Grant)
	}
}

// held makes the worker the holder under is, acquired by a call sent at
// sent (worker clock).
func (k *worker) held(is registry.Issued, sent time.Time) {
	same := k.is.Grant != nil && k.is.Grant.Lease == is.Grant.Lease
	if !same {
		k.releasing, k.draining, k.proofUntilMs = false, false, 0
	}
	forgot := k.journalLease != "" && k.journalReq == is.Grant.RequestID && is.Grant.Lease != k.journalLease
	if is.Grant.Lease != k.journalLease {
		// A new grant: its segments start at 1.
		k.journalLease, k.journalReq, k.ackedSeq, k.sentSeq = is.Grant.Lease, is.Grant.RequestID, 0, 0
	}
	k.is = is
	k.grantBytes, k.statusBytes = is.Grant.Encode(), is.Status.Encode()
	k.confirm(is, sent, false)
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
	if !same {
		k.w.chk.held(is.Grant.Lease, k.attemptMs)
		k.w.heldHook(k)
	}
	k.w.tracef("%s HELD fence %d lease %s", k.name, is.Grant.FenceToken, is.Grant.Lease)
	k.writeNext()
}

// confirm records a HELD answer: the client's new schedule (or, for a
// status refresh, only the newer proof) and the timer chain that serves it.
func (k *worker) confirm(is registry.Issued, sent time.Time, statusOnly bool) {
	k.is.Status, k.is.StatusProof = is.Status, is.StatusProof
	k.statusBytes = is.Status.Encode()
	if statusOnly {
		k.sched = k.sched.Refreshed(is.Status)
	} else {
		ttl := time.Duration(k.is.Grant.TTLMs) * time.Millisecond
		k.sched = client.Confirmed(clientOptions, sent, ttl, is.Status, k.w.rng.float(-1, 1))
	}
	k.tick()
}
