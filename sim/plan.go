package sim

import (
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
)

// plan schedules the round's workers and arms its faults. Every draw comes
// from the round's PRNG in a fixed order.
func (w *world) plan() {
	a, b, c := w.workers[0], w.workers[1], w.workers[2]
	if w.cfg.Trace != nil {
		var on []string
		for f := range faultCount {
			if w.on[f] {
				on = append(on, f.String())
			}
		}
		w.tracef("round %d (seed %d): faults %v; gate clock skew %+d ms, beyond bound %v", w.round, w.seed, on, w.res.clock.skewMsAt(0), w.beyondBound)
	}
	w.at(0, a.start)
	bStart := w.rng.between(0, 4000)
	if w.on[FaultReleaseRace] {
		a.releaseRace = true // B starts when A releases
		bStart = 30_000      // unless A never gets there
	}
	w.at(bStart, b.start)
	if !w.on[FaultRestore] {
		c.started = true // C only joins a restored registry
		c.done = true
	}
	victim := func() *worker { return w.workers[w.rng.pick(2)] }
	if w.on[FaultPause] {
		k := victim()
		k.pauseAtWrite = int(w.rng.between(1, 4))
		k.pauseOverMs = w.rng.between(500, 8000) // past the lease's TTL
	}
	if w.on[FaultLostRelease] {
		w.workers[w.lateRNG.pick(2)].lostRelease = true
	}
	if w.on[FaultLongHold] {
		victim().holdTTLs = w.rng.between(2, 5)
	}
	if w.on[FaultReorder] {
		victim().reorderAt = uint64(w.rng.between(1, 3))
	}
	if w.on[FaultPayload] {
		victim().payloadAt = uint64(w.rng.between(1, 3))
	}
	if w.on[FaultLateCopy] {
		// Not on a worker that also sends extra copies (reordered or
		// wrong-payload segments): its release without waiting must leave
		// only the held-back write unanswered.
		if k := victim(); k.reorderAt == 0 && k.payloadAt == 0 {
			k.lateCopy = true
		}
	}
	if w.on[FaultPartition] {
		x := party(w.rng.pick(int(partyCount)))
		y := party((int(x) + 1 + w.rng.pick(int(partyCount)-1)) % int(partyCount))
		from := w.rng.between(0, 8000)
		w.partitions = append(w.partitions, partition{a: x, b: y, fromMs: from, toMs: from + w.rng.between(500, 8000)})
	}
	if w.on[FaultCrash] {
		k := victim()
		at := w.rng.between(200, 8000)
		w.at(at, k.crash)
		w.at(at+w.rng.between(200, 10_000), k.restart)
	}
	if w.on[FaultAdversary] {
		for n := w.rng.between(1, 3); n > 0; n-- {
			w.at(w.rng.between(300, 15_000), w.adv.attack)
		}
	}
}

// heldHook drives the restore fault: snapshot the store before any grant
// or at the first one, restore it some time after a later grant, restart
// the registry, and bring in worker C, whose acquire then re-issues a
// fence (equal to one the gate has seen, or below it).
//
// The restore is of either kind etcd does (memstore.RestoreKind): reusing
// the revisions written since the snapshot, or keeping them growing. In
// the rounds with two registry replicas one keeps running through it, its
// record cache intact (replicas.go).
func (w *world) heldHook(k *worker) {
	if !w.on[FaultRestore] || w.restored {
		return
	}
	if w.image == nil {
		w.image = emptyImage // an empty store: the deepest regression
		if !w.rng.chance(0.5) {
			w.image = w.store.Image()
		}
		return
	}
	w.restored = true
	kind := memstore.BumpRevisions
	if w.rng.chance(restoreReuseShare) {
		kind = memstore.ReuseRevisions
	}
	w.after(w.rng.between(0, 2000), func() {
		w.store.Restore(w.image, kind)
		w.chk.restored()
		w.restartReplica()
		w.tracef("store restored from the snapshot (%s); registry restarted", kind)
		w.workers[2].start()
	})
}

// Shares of the restore fault's rounds that reuse revisions, and that run
// the registry as two replicas, one of which keeps running through the
// restore.
const (
	restoreReuseShare    = 0.5
	restoreReplicasShare = 0.5
)

// emptyImage is the store before anything was written.
var emptyImage = memstore.New().Image()

// releaseRace starts the next worker exactly as k releases.
func (w *world) releaseRace(k *worker) {
	for _, o := range w.workers[:2] {
		if o != k && !o.started {
			o.start()
		}
	}
}

// lostReleaseSlackMs is what a round keeps after a lost release's lease
// ended by its TTL: time for a reconcile waiting on the resource to
// finish before the round does.
const lostReleaseSlackMs = 60_000

// endsInRound reports whether g's lease, its release lost now, would end
// by its TTL (renewals never take its expiry past now + TTL) and
// lock-delay with lostReleaseSlackMs of the round left: the lost-release
// fault loses only such a release, so the round sees the end it costs.
func (w *world) endsInRound(g *grant.Grant, reg *registry.Registry) bool {
	return w.now+int64(g.TTLMs)+int64(reg.Config().LockDelayMs)+lostReleaseSlackMs <= roundMsMax
}
