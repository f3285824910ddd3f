package sim

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

// Round limits, in true simulated milliseconds.
const (
	roundMsMax     = 16 * 60 * 1000 // long enough to see a 15-minute UNKNOWN reconcile fail
	roundEventsMax = 50_000         // a round that needs more has a livelock: reported
	// Within the bound, a clock's offset is at most skewOffsetShare of it
	// and its drift adds at most skewDriftShare over the longest round,
	// so |skew| stays below the bound for the whole round.
	skewOffsetShare = 0.6
	skewDriftShare  = 0.3
	// Beyond the bound, a gate's clock lags by 3 to 10 times it.
	beyondLagTimesMin = 3
	beyondLagTimesMax = 10
	operatorDelayMin  = 5000 // FENCE_REGRESSION → operator raises the floor and resumes
	operatorDelayMax  = 30_000
	// With FaultGateLag the gate's clock lags by at least this share of
	// the bound (and stays inside it).
	gateLagShareMin = 0.5
)

// world is one round: every party, the event queue and the round's PRNG.
// Nothing in it is shared with another round except the read-only keys.
type world struct {
	cfg    *Config
	keys   *keySet
	round  int
	seed   uint64
	rng    rng
	on     [faultCount]bool
	counts *Counts

	now    int64 // true simulated ms since the round began
	q      eventQueue
	seq    uint64
	digest hash.Hash64

	regClock    partyClock
	proofTTLMs  uint64 // the registry's StatusProofTTLMs this round (settings.go)
	beyondBound bool
	store       *memstore.Store
	regs        []*replica        // the registry's replicas (replicas.go)
	kept        *replica          // after a restore, the replica that kept running, while it waits to rejoin
	rejoining   *replica          // the kept replica, rejoined: it takes every call until it decides to write
	recordRev   uint64            // the main resource's record's mod revision, as last committed or restored
	pending     []*pendingAcquire // acquires the registry is serving, queued
	res, nbr    *resource
	workers     []*worker
	partitions  []partition
	held        []heldCopy        // FaultLateCopy: originals held until the next owner writes
	jobSeq      map[uint64]uint64 // the main resource's outbox: last job number per fence
	chk         *checker
	adv         *adversary

	lateRNG      rng             // the faults from FaultLostRelease on: their draws (newWorld)
	image        *memstore.Image // FaultRestore: the snapshot to restore
	restored     bool
	operatorDue  bool
	reconcilesUp int // MUTATION_UNKNOWN reconciles still open
}

func newWorld(cfg *Config, keys *keySet, round int, c *Counts, env *sqlEnv) *world {
	w := &world{cfg: cfg, keys: keys, round: round, seed: roundSeed(cfg.Seed, round), counts: c, digest: fnv.New64a(),
		jobSeq: map[uint64]uint64{}}
	w.rng = newRNG(w.seed)
	for f := range FaultLostRelease { // the faults before lost-release draw from the round's PRNG
		w.on[f] = w.rng.chance(cfg.Rates[f])
	}
	// Later faults draw from a stream of their own, so adding one moves no
	// round of a run without it.
	w.lateRNG = newRNG(w.seed ^ lateFaultStream)
	for f := FaultLostRelease; f < faultCount; f++ {
		w.on[f] = w.lateRNG.chance(cfg.Rates[f])
	}
	w.chk = newChecker(w, c)
	w.proofTTLMs = w.drawProofTTLMs()
	w.store = memstore.New()
	w.store.OnCommit(w.committed)
	w.regs = []*replica{w.newReplica()}
	if w.on[FaultRestore] && w.rng.chance(restoreReplicasShare) {
		w.regs = append(w.regs, w.newReplica())
	}
	name := fmt.Sprintf("sim/round-%d", round)
	gateClock := w.partyClock(true)
	g := w.gateAdapter(env, gateClock)
	w.res = newResource(w, name, gateClock, g)
	w.nbr = newResource(w, name+"-neighbour", gateClock, g)
	w.adv = newAdversary(w)
	for _, id := range []party{pWorkerA, pWorkerB, pWorkerC} {
		w.workers = append(w.workers, newWorker(w, id, w.partyClock(false)))
	}
	w.plan()
	return w
}

// committed is the store's commit hook: each commit that wrote the main
// resource's record goes to the checker (ground truth of what the
// registry decided) and wakes the acquires waiting on it.
func (w *world) committed(c *memstore.Committed) {
	if c.Resource != w.res.name || !c.RecordWritten {
		return
	}
	rec, err := c.Record()
	if err != nil {
		panic("sim: the store holds a record it cannot decode: " + err.Error())
	}
	if w.cfg.Trace != nil {
		var ws []string
		for _, x := range rec.Waiters {
			ws = append(ws, fmt.Sprintf("%s/%s seen %d dl %d", x.Owner, x.RequestID, x.SeenMs-epochBase.UnixMilli(), x.DeadlineMs-epochBase.UnixMilli()))
		}
		w.tracef("store commit rev %d: holder %v waiters %v freeAt %d", c.Revision, rec.Holder != nil, ws, rec.FreeAtMs-epochBase.UnixMilli())
	}
	w.recordAt(c.Revision)
	w.chk.committed(rec, func(k lockstate.RequestKey) bool {
		e, err := c.Request(k)
		return err == nil && e != nil
	})
	w.recordChanged()
}

// partyClock draws a gate's or client's clock: within the skew bound with
// FaultSkew, lagging beyond it for a gate in a beyond-bound round.
func (w *world) partyClock(isGate bool) partyClock {
	var c partyClock
	if w.on[FaultSkew] {
		bound := float64(w.cfg.SkewBoundMs)
		driftPpmMax := skewDriftShare * bound / roundMsMax * 1e6
		c.offsetMs = w.rng.float(-skewOffsetShare*bound, skewOffsetShare*bound)
		c.driftPpm = w.rng.float(-driftPpmMax, driftPpmMax)
	}
	if isGate && w.on[FaultGateLag] {
		// Lagging inside the bound, near its edge: a proof looks fresh to
		// this gate for almost the whole bound after it lapsed.
		c.offsetMs = -w.rng.float(gateLagShareMin, skewOffsetShare) * float64(w.cfg.SkewBoundMs)
	}
	if isGate && w.cfg.SkewBeyondBound && w.rng.chance(w.cfg.BeyondBoundRate) {
		w.beyondBound = true
		c.offsetMs = -float64(w.rng.between(beyondLagTimesMin*w.cfg.SkewBoundMs, beyondLagTimesMax*w.cfg.SkewBoundMs))
	}
	return c
}

func (w *world) at(t int64, fn func()) {
	w.seq++
	w.q.push(event{atMs: t, seq: w.seq, fn: fn})
}

func (w *world) after(d int64, fn func()) { w.at(w.now+d, fn) }

// run executes the round to its end and closes the checker's books.
func (w *world) run() {
	events := 0
	for w.q.Len() > 0 {
		e := w.q.pop()
		if e.atMs > roundMsMax {
			break
		}
		if events++; events > roundEventsMax {
			w.chk.violate("round-livelock", "more than %d events", roundEventsMax)
			break
		}
		w.now = e.atMs
		w.mix(uint64(e.atMs), e.seq)
		e.fn()
	}
	w.counts.Events += events
	w.finish()
}

func (w *world) finish() {
	for _, k := range w.workers {
		if k.unknownMs >= 0 && !k.crashed {
			w.counts.UnknownUnresolved++
			w.chk.violate("unknown-unresolved", "%s still OWNERSHIP_UNKNOWN since %d ms", k.name, k.unknownMs)
		}
	}
	switch {
	case w.reconcilesUp > 0 && w.chk.blockedByRestore():
		// Waiting behind a grant the restored registry issued to nobody
		// (checker.blockedByRestore): not budgeted, as a reconcile resolved
		// after a restore is not.
		w.counts.UnknownOpenAfterRestore += w.reconcilesUp
		w.tracef("%d MUTATION_UNKNOWN reconciles open at the round's end behind a grant the restored registry issued to nobody (not budgeted)", w.reconcilesUp)
	case w.reconcilesUp > 0:
		w.counts.UnknownUnresolved += w.reconcilesUp
		w.chk.violate("unknown-unresolved", "%d MUTATION_UNKNOWN reconciles open at the round's end", w.reconcilesUp)
	}
	w.chk.finish()
	w.counts.Applied += w.res.applied + w.nbr.applied
	w.counts.Fenced += w.res.fenced + w.nbr.fenced
	w.counts.Rounds++
	w.counts.Digest = mixDigest(w.counts.Digest, w.digest.Sum64())
}

// mix folds values into the round's event-log digest.
func (w *world) mix(vs ...uint64) {
	var b [8]byte
	for _, v := range vs {
		binary.LittleEndian.PutUint64(b[:], v)
		w.digest.Write(b[:])
	}
}

// logCall folds a registry answer into the digest and shows the checker
// what the registry said.
func (w *world) logCall(kind msgKind, is wire.Issued, err error) {
	w.chk.said(is)
	var fence uint64
	if is.Grant != nil {
		fence = is.Grant.FenceToken
	}
	w.mix(uint64(kind), fence, uint64(len(wire.CodeOf(err))))
	if w.cfg.Trace != nil {
		w.tracef("registry %s → fence %d err %v", kind, fence, err)
	}
}

func (w *world) tracef(format string, args ...any) {
	if w.cfg.Trace != nil {
		fmt.Fprintf(w.cfg.Trace, "%8d ms  %s\n", w.now, fmt.Sprintf(format, args...))
	}
}
