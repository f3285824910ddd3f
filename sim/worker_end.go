package sim

import (
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
)

// release gives the lease back once the operation is finished or
// hopeless: the core's Release, with its drain (the release is sent only
// once no unsettled write's proof can still be accepted), unless the run
// is NaiveRelease.
func (k *worker) release() { k.releaseWith(!k.w.cfg.NaiveRelease) }

func (k *worker) releaseWith(drain bool) {
	l := k.lease
	if l == nil {
		return
	}
	if v := l.View(); v.State.Terminal() || v.Releasing {
		return // nothing to begin
	}
	l.Step(k.localNow(), core.Release{Drain: drain})
	if until := l.View().ReleaseAt; until.After(k.localNow()) {
		k.w.tracef("%s drains until %s before releasing", k.name, until.Format(grant.TimeLayout))
	}
	k.driveLease()
}

// leaseEnded is the end of the lease (its core reached EXPIRED or
// RELEASED): the operation is done, or what was in flight is unknown and
// a new request follows.
func (k *worker) leaseEnded(how core.Event) {
	g := k.lease.View().Issued.Grant
	k.lease = nil
	k.wakeTok++
	if how == core.EvReleaseOK && k.ackedSeq >= k.segs {
		k.finishOps()
		return
	}
	k.lost(g)
}

// lost handles the end of grant g with the operation unfinished: anything
// sent and not answered is MUTATION_UNKNOWN, resolved against the
// resource's receipts; then a new request, if any are left.
func (k *worker) lost(g *grant.Grant) {
	k.wakeTok++
	if k.sentSeq > k.ackedSeq && g != nil {
		k.w.reconcile(k, client.Unknown{Resource: k.w.res.name, OperationID: k.opID, FenceToken: g.FenceToken,
			SegmentSeq: k.sentSeq, PayloadDigest: payloadDigest(k.opID, k.sentSeq, 0)})
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
// becomes PROVEN_ABSENT (or ACCEPTED). One fencing at a time, when the
// worker is idle, at most fencesMax a round: a write whose copy is still
// in the network stays UNDETERMINED (its segment has no receipt, and the
// fence has not passed it) until someone writes above it, however many
// earlier segments were accepted.
func (k *worker) fenceForRecovery() {
	if !k.done || k.fencing || k.crashed || k.fences >= fencesMax {
		return
	}
	k.w.tracef("%s fences the resource to resolve a MUTATION_UNKNOWN", k.name)
	k.fences++
	k.fencing, k.done, k.opsLeft = true, false, opsPerWorker
	k.newRequest()
	k.acquire()
}

// fencesMax bounds a worker's fencings in a round.
const fencesMax = 3

func (k *worker) finishOps() {
	k.done, k.fencing = true, false
	k.wakeTok++
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
	k.inflight, k.unknownMs = 0, -1
	k.acq, k.lease = nil, nil
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
	k.acquire() // a new process: new cores, the journalled request ID
}
