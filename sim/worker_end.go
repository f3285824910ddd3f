package sim

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/client"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// release gives the lease back once the operation is finished or
// hopeless, retrying a lost answer (release is idempotent) as the client
// does. A renewal in flight is abandoned: its answer no longer matters.
func (k *worker) release() {
	st := k.m.State()
	if st.Terminal() || st == client.StateRequested || k.is.Grant == nil {
		return
	}
	if st == client.StateRenewing {
		k.step(client.EvRenewLost)
	}
	k.releasing, k.draining = true, false
	k.tickTok++ // no more renewals
	g := k.is.Grant
	do := func(g *grant.Grant) (registry.Issued, error) {
		return registry.Issued{}, k.w.reg.Release(context.Background(), k.name, g.Resource, g.Lease)
	}
	if k.releaseRace {
		k.releaseRace = false
		k.w.releaseRace(k)
		k.w.after(k.w.rng.between(2000, 10_000), func() { _, _ = do(g) }) // the same release, re-delivered late
	}
	k.call(msgRelease, do, func(_ time.Time, _ registry.Issued, err error) {
		switch held, refused := k.judgeRelease(err); {
		case held:
			k.step(client.EvReleaseOK)
			if k.ackedSeq >= k.segs {
				k.finishOps()
				return
			}
			k.lost(g)
		case refused:
			k.step(client.EvReleaseRefused)
			k.lost(g)
		default:
			k.step(client.EvReleaseLost)
			k.timer(clientOptions.QueryInterval.Milliseconds(), k.release)
		}
	}, func() {
		k.step(client.EvReleaseLost)
		k.timer(clientOptions.QueryInterval.Milliseconds(), k.release)
	})
}

// judgeRelease reads a release answer: ok, a definite refusal (the lease
// had already ended), or lost.
func (k *worker) judgeRelease(err error) (ok, refused bool) {
	if err == nil {
		return true, false
	}
	switch registry.CodeOf(err) {
	case "", "UNAVAILABLE", "CONFLICT":
		return false, false
	}
	return false, true
}

// lost handles the end of grant g with the operation unfinished: anything
// sent and not answered is MUTATION_UNKNOWN, resolved against the
// resource's receipts; then a new request, if any are left.
func (k *worker) lost(g *grant.Grant) {
	k.tickTok++
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
	k.tickTok++
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
	k.inflight, k.is, k.unknownMs = 0, registry.Issued{}, -1
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
	k.m = client.NewMachine() // a new process: a new machine, the journalled request ID
	k.acquire()
}
