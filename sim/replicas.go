package sim

import (
	"context"
	"math/rand/v2"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// The registry runs as one replica, or, in a share of the restore fault's
// rounds, as two over the one store, as `fencegate serve` replicas share
// an etcd cluster; each call reaches one of them, as a load balancer
// spreads calls. Each replica keeps its own record cache. At the restore
// one replica restarts (a new process, its cache empty); the other keeps
// running, its cache holding the record at the revision it last saw.
//
// The kept replica is the danger a revision-reusing restore brings: the
// restored store hands that revision out again, to other contents, and a
// decision made on the cached record would commit over the restored one
// on the revision alone. The simulator gives it its worst moment on
// purpose, as the late-copy fault does a late write: the kept replica
// takes no call until the store's record is back at the revision it
// cached, and then takes every call until it decides to write. Only the content compares of
// registry.Write (RecordWas, SettingsWas) stop that commit; --break
// content-compare takes them away, and the checker counts the updates
// such commits lose.

// replica is one registry process and the revision of the main resource's
// record it last saw (what its cache holds).
type replica struct {
	*registry.Registry
	seenRev uint64
}

// separateStatusOneIn: one replica in this many issues the earlier form.
const separateStatusOneIn = 4

// batchProofsOneIn: one replica in this many signs batch proofs.
const batchProofsOneIn = 2

// newReplica starts a registry process over the round's store, seen
// through a view that notes what it sees.
func (w *world) newReplica() *replica {
	cfg := registry.DefaultConfig(epochLive)
	cfg.ClockSkewMaxMs = uint64(w.cfg.SkewBoundMs)
	cfg.StatusProofTTLMs = w.proofTTLMs
	cfg.LockDelayMs = max(cfg.LockDelayMs, cfg.ClockSkewMaxMs)
	// One replica in four issues the earlier grant form (grant plus
	// status, registry.Config.SeparateStatus), as during a rollout: a
	// round with two replicas may mix the forms, and a restart may switch
	// one replica's form, as a rolling upgrade or rollback does. With
	// StatusQuery every grant is the earlier form: that mode's envelopes
	// carry no evidence of their own, so that the gate takes the
	// registry's word alone, and a held statement cannot be taken out of
	// a signed grant as a status proof can be left out of an envelope.
	cfg.SeparateStatus = w.rng.r.IntN(separateStatusOneIn) == 0 || w.cfg.StatusQuery
	// Every other replica signs batch proofs (registry.Config.
	// BatchGrantProofs), with an Ed25519 key: the draw is made whatever
	// the key, so that an HMAC run draws as an Ed25519 one does. The
	// simulator calls a replica from one goroutine at a time, so each
	// batch is of one grant (the proof's kind and format, an empty
	// path); trees of many are the adversary's (batch-splice).
	batch := w.rng.r.IntN(batchProofsOneIn) == 0
	cfg.BatchGrantProofs = batch && w.keys.registry.Alg == grant.AlgEd25519
	rnd := rand.NewPCG(w.rng.r.Uint64(), w.rng.r.Uint64())
	r := &replica{}
	store := w.registryStore(replicaView{Store: w.store, w: w, r: r})
	reg, err := registry.New(store, cfg, registryClock{w}, w.keys.registry, registry.WithRand(rnd))
	if err != nil {
		panic("sim: registry: " + err.Error())
	}
	r.Registry = reg
	return r
}

// restartReplica restarts the registry's last replica: a new process, its
// record cache empty, the calls it was serving gone with the old one. The
// other replica, if any, keeps running, its cache and waiting acquires as
// they were, and waits to rejoin until the restored store's record is
// back at the revision it cached (at once if it is there already or the
// revision is not coming back).
func (w *world) restartReplica() {
	w.regs[len(w.regs)-1] = w.newReplica()
	live := w.pending[:0]
	for _, p := range w.pending {
		if w.serving(p.reg) {
			live = append(live, p)
		}
	}
	w.pending = live
	if len(w.regs) > 1 && w.regs[0].seenRev > w.recordRev {
		w.kept = w.regs[0]
		w.tracef("the other replica kept running, its cache at revision %d; it rejoins when the record is back there (now %d)", w.kept.seenRev, w.recordRev)
	}
}

// recordAt notes that the main resource's record is now at rev, and lets
// a waiting kept replica rejoin once rev reaches the one it cached.
func (w *world) recordAt(rev uint64) {
	w.recordRev = rev
	if w.kept != nil && rev >= w.kept.seenRev {
		w.tracef("the record is at revision %d: the kept replica rejoins", rev)
		w.rejoining, w.kept = w.kept, nil
	}
}

// registry is the replica a call reaches: a kept replica that rejoined
// takes every call until it has decided to write; then either, as a load
// balancer spreads calls, but never a kept replica still waiting to
// rejoin.
func (w *world) registry() *registry.Registry {
	if r := w.rejoining; r != nil {
		return r.Registry
	}
	if len(w.regs) == 1 || w.kept != nil {
		return w.regs[len(w.regs)-1].Registry
	}
	return w.regs[w.rng.pick(len(w.regs))].Registry
}

// serving reports whether reg is a replica still running.
func (w *world) serving(reg *registry.Registry) bool {
	for _, r := range w.regs {
		if r.Registry == reg {
			return true
		}
	}
	return false
}

// replicaView is the store as one replica sees it: the same store, noting
// the main resource's record revision each answer shows the replica, so
// the simulator knows what its cache holds.
type replicaView struct {
	registry.Store
	w *world
	r *replica
}

func (v replicaView) Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	snap, err := v.Store.Read(ctx, resource, keys)
	if err == nil && resource == v.w.res.name {
		v.r.seenRev = snap.RecordRev
	}
	return snap, err
}

func (v replicaView) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if v.w.rejoining == v.r {
		v.w.rejoining = nil // its first write since it rejoined: the load balancer spreads calls again
	}
	res, err := v.Store.Commit(ctx, w)
	switch {
	case err != nil || w.Resource != v.w.res.name:
	case res.OK && w.Record != nil:
		v.r.seenRev = res.Revision
	case !res.OK:
		v.r.seenRev = res.Current.RecordRev
	}
	return res, err
}
