package sim

import (
	"context"
	"errors"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// release gives the lease back once the operation is finished or hopeless.
func (k *worker) release() {
	if k.state == stReleased || k.state == stExpired {
		return
	}
	k.releasing, k.draining = true, false
	k.callTok++
	tok, inc, g := k.callTok, k.inc, k.is.Grant
	deliver := func() {
		err := k.w.reg.Release(context.Background(), k.name, g.Resource, g.Lease)
		k.w.logCall(msgRelease, registry.Issued{}, err)
		k.w.send(pRegistry, k.id, msgReleaseReply, func() {
			k.run(inc, func() { k.onRelease(tok, err) })
		})
	}
	k.w.send(k.id, pRegistry, msgRelease, deliver)
	if k.releaseRace {
		k.releaseRace = false
		k.w.releaseRace(k)
		k.w.after(k.w.rng.between(2000, 10_000), deliver) // the same release, re-delivered late
	}
	k.timer(callTimeoutMs, func() {
		if k.callTok == tok {
			if k.releaseTry++; k.releaseTry < 5 {
				k.release()
				return
			}
			k.lost(g) // let it expire
		}
	})
}

func (k *worker) onRelease(tok int, err error) {
	if tok != k.callTok {
		return
	}
	k.callTok++
	k.releaseTry = 0
	switch {
	case err == nil:
		k.resolveUnknown() // the registry's word on the lease, like a query's
		k.state = stReleased
		if k.ackedSeq >= k.segs {
			k.finishOps()
			return
		}
		k.lost(k.is.Grant)
	case errors.Is(err, registry.ErrLeaseExpired), errors.Is(err, registry.ErrNotHolder), errors.Is(err, registry.ErrEpochRevoked):
		k.resolveUnknown()
		k.lost(k.is.Grant)
	default:
		k.timer(callTimeoutMs, k.release)
	}
}

// lost handles the end of grant g with the operation unfinished: anything
// sent and not answered is MUTATION_UNKNOWN, resolved against the
// resource's receipts; then a new request, if any are left.
func (k *worker) lost(g *grant.Grant) {
	if k.state != stReleased {
		k.state = stExpired
	}
	if k.sentSeq > k.ackedSeq && g != nil {
		k.w.reconcile(k, k.opID, g.FenceToken)
	}
	k.inflight = 0
	k.opsLeft--
	if k.opsLeft <= 0 || k.w.now > giveUpMs && !k.fencing || k.ackedSeq >= k.segs {
		k.finishOps()
		return
	}
	backoff := k.w.rng.between(busyRetryMsMin, 2*busyRetryMsMin) + k.backoffMs
	k.backoffMs = 0
	k.timer(backoff, func() {
		k.newRequest()
		k.acquire()
	})
}

// fenceForRecovery is the recoverer's last resort for an UNDETERMINED
// MUTATION_UNKNOWN: acquire a newer grant and write under it, so the
// resource's highestFence passes the unknown write's fence and the answer
// becomes PROVEN_ABSENT (or ACCEPTED). Once per worker per round.
func (k *worker) fenceForRecovery() {
	if !k.done || k.fencing || k.crashed {
		return
	}
	k.w.tracef("%s fences the resource to resolve a MUTATION_UNKNOWN", k.name)
	k.fencing, k.done, k.opsLeft = true, false, opsPerWorker
	k.newRequest()
	k.acquire()
}

func (k *worker) finishOps() {
	k.done = true
	k.state = stIdle
}

// crash loses every volatile field; restart resumes from the journal,
// asking for the same request ID so the registry answers with the same
// grant (never a second identity).
func (k *worker) crash() {
	if k.crashed || k.done {
		return
	}
	k.w.tracef("%s crashed", k.name)
	k.crashed = true
	k.inc++
	k.state, k.inflight, k.is, k.unknownMs = stIdle, 0, registry.Issued{}, -1
}

func (k *worker) restart() {
	if !k.crashed {
		return
	}
	k.crashed = false
	k.w.tracef("%s restarted", k.name)
	if !k.started {
		k.start()
		return
	}
	k.attemptMs = k.w.now
	k.acquire()
}
