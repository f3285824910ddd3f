package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

// This file is the read/write lock rounds (issue 46): workers over a
// small pool of read/write locks each take a reader's lease
// (wire.ModeRead), the writer's, the writer's then a downgrade to a
// reader (registry.Downgrade), or a plain exclusive lock on the round's
// other resource. They run the product's registry (two replicas over one
// memstore; each waiting acquire a registry.Acquisition stepped on the
// round's event queue: when its lock's record is committed, as a watch
// wakes it, and at its WakeAt, as its poll does) and a real gate over the
// round's locks, through which a writer writes and a reader tries to (a
// reader's grant must be refused READ_GRANT, whether its envelope names
// NAME/_read or NAME). The gate, the clocks (each worker's and the
// gate's, skewed within the round's bound) and the registry's settings
// are drawn per round as the set rounds draw theirs (setfaults.go; its
// network faults not yet), and the skew bound over [1, SkewBoundMsMax]
// on a gate made for the round, so a downgrade's hold-back
// (ReadersFromMs: proof life + skew, capped by the write lease's expiry)
// and the claim window sweep their ranges. TTLs are drawn over the
// registry's whole accepted range (log-uniformly, both ends and the
// downgrade's hold-back weighted), waits over [2 s, WaitMsMax]. A share of
// holders freeze past their TTL and lock-delay before they write, a
// share die holding (a dead reader's share must end by its own TTL), a
// share renew once, a share of waits are given up (Abandon) and a share
// die waiting (their tickets left behind, for the registry to skip). Ground
// truth is what the registry committed (the store's commit hook), judged
// by the registry clock; a lease stays in the truth until a committed
// record says it ended.
//
// Checker properties, each 0 in a correct run:
//   - WriterBeside: a writer's live lease beside any other live lease on
//     its lock (or a second plain holder);
//   - ReaderMutation: a reader's write attempt not refused READ_GRANT;
//   - Stale: a write accepted at a gate with a fence below a writer's
//     fence the registry had granted there before;
//   - DowngradeGap: a downgrade's reader lease granted after another
//     writer than its own write lease, or not carrying that lease's
//     fence, or a retry of the downgrade (the same request, on the other
//     replica) answered with another grant;
//   - ReaderEarly: a reader other than a downgrader granted before the
//     downgrade's statements expired (min(downgrade + StatusProofTTLMs +
//     ClockSkewMaxMs, the write lease's expiry));
//   - ReaderPastTTL: a reader's lease still live past the TTL its own
//     grant and renewals gave it, plus lock-delay;
//   - Jumped (writer preference, FIFO): a lease granted while a ticket of
//     a still-waiting acquire that joined the queue before it (or before
//     it asked, for a lease granted without a ticket) is still queued,
//     when either of the two is a writer;
//   - Stuck (liveness): a wait answered only after its lock had been
//     clear for it longer than the claim bound (rwClaimBound): for a
//     writer no live lease, for a reader no live writer and past the
//     downgrade hold-back, past lock-delay, and no waiting ticket of a
//     still-waiting acquire ahead of it that it must let go first (any
//     for a writer, a writer's for a reader) — nor of a dead waiter
//     while the lock is held, or a dead reader's ahead of a writer
//     before ReadersFromMs (the registry cannot tell either from a live
//     one), nor of a wait that ran out or a dead waiter past its
//     deadline until its WaiterGraceMs is over (its ticket keeps its
//     place);
//   - Unended: a round cut off, or a wait without an answer at its end.
//
// Negative controls (sim/negative): stale-read (a store reading a write
// behind, comparing nothing) makes WriterBeside non-zero; read-grant (the
// gate's READ_GRANT check off, gate/gatebreak) ReaderMutation; fence (the
// lease-only gate) Stale; two-step-downgrade (a downgrade done as a
// release then a read acquire, as Curator's was) DowngradeGap; no-hold-back
// (a store dropping ReadersFromMs from every record it commits)
// ReaderEarly; shared-read-lease (a store giving every reader the latest
// reader expiry, one lease for all, as Redisson's read lock kept a dead
// instance's share alive) ReaderPastTTL; readers-first (a store moving
// readers' tickets ahead of writers') Jumped; no-poll Stuck.

// Read/write lock round limits and rates, in simulated ms.
const (
	rwPoolMin        = 1
	rwPoolMax        = 3
	rwWorkersMin     = 3
	rwWorkersMax     = 8
	rwOpsPerWorker   = 6
	rwReadShare      = 0.4 // a reader's lease
	rwWriteShare     = 0.2 // the writer's lease
	rwDowngradeShare = 0.2 // the writer's, then a downgrade; the rest (0.2) a plain lock on the other resource
	rwFreezeShare    = 0.15
	rwCrashShare     = 0.1
	rwRenewShare     = 0.3
	rwAbandonShare   = 0.15
	rwVanishShare    = 0.05 // a waiter dies waiting: its ticket stays until skipped or past its deadline
	rwRetryShare     = 0.3  // a downgrade asked again with the same request, on the other replica
	rwHoldMsMax      = 1500 // below TTLMsMin: a holder that does not freeze releases in time
	rwWaitMsMin      = 2000
	rwFreezeMsExtra  = 4000
	// HandoffClaimMs over the whole range registry.Config accepts.
	rwClaimMsMin = registry.HandoffClaimMsMin
	rwClaimMsMax = registry.HandoffClaimMsMax
	rwSkewMsMin  = 1
	rwRoundMsMax = 60 * 60 * 1000
	rwEventsMax  = 400_000
	// rwDownSuffix ends a downgrade's reader request ID.
	rwDownSuffix = ".down"
)

// RWLockCounts is what the read/write lock rounds measured.
type RWLockCounts struct {
	Rounds, Reads, Writes, Downgrades, Plain, Shared               int
	Frozen, Crashed, Renewed, Abandoned, Vanished, RanOut, Refused int
	GateWrites, Accepted, ReaderWrites, ReadGrantRefused           int
	// ClearMsMax is the longest a wait was answered after its lock was
	// clear for it (the stuck count's margin to the claim bound).
	ClearMsMax int64
	// Safety: each must be 0.
	WriterBeside, ReaderMutation, Stale, DowngradeGap, ReaderEarly, ReaderPastTTL, Jumped int
	// Liveness: each must be 0.
	Stuck, Unended int
	// Net is what the rounds' clocks did and which gates they ran on
	// (setfaults.go; no network faults yet).
	Net        NetCounts
	Violations []Violation
	Digest     uint64
}

// OK reports whether every safety and liveness count is 0.
func (c *RWLockCounts) OK() bool { return c.Bad() == 0 }

// Bad is the sum of the counts OK requires to be 0.
func (c *RWLockCounts) Bad() int {
	return c.WriterBeside + c.ReaderMutation + c.Stale + c.DowngradeGap + c.ReaderEarly + c.ReaderPastTTL + c.Jumped + c.Stuck + c.Unended
}

// merge adds o (a later round) into c: every int field adds up but
// ClearMsMax (the larger), the violations are capped, the digest chained.
func (c *RWLockCounts) merge(o *RWLockCounts) {
	cv, ov := reflect.ValueOf(c).Elem(), reflect.ValueOf(o).Elem()
	for i := range cv.NumField() {
		a, b := cv.Field(i), ov.Field(i)
		switch {
		case cv.Type().Field(i).Name == "ClearMsMax":
			a.SetInt(max(a.Int(), b.Int()))
		case isInt(a.Kind()):
			a.SetInt(a.Int() + b.Int())
		}
	}
	for _, v := range o.Violations {
		if len(c.Violations) < ViolationsMax {
			c.Violations = append(c.Violations, v)
		}
	}
	c.Net.add(&o.Net)
	c.Digest = mixDigest(c.Digest, o.Digest)
}

// RunRWLocks runs rounds read/write lock rounds of seed, with the
// negative control neg (Shadow: the lease-only gate; Policy: the gate's
// policy replaced; Store: the registry's store replaced;
// TwoStepDowngrade; NoPoll) if any, on parallel goroutines (0: one per
// core). Rounds are independent worlds seeded from (seed, round) and
// merged in round order, so parallel changes only the speed, never a
// count or the digest.
func RunRWLocks(seed uint64, rounds, parallel int, neg *Negative) (*RWLockCounts, error) {
	return RunRWLocksWith(SetOptions{Seed: seed, Rounds: rounds, Parallel: parallel, Negative: neg})
}

// RunRWLocksWith runs the read/write lock rounds o names, with the set
// rounds' clocks, gates and settings (setfaults.go).
func RunRWLocksWith(o SetOptions) (*RWLockCounts, error) {
	run, err := newSetRun(o)
	if err != nil {
		return nil, err
	}
	defer run.close()
	results := inParallelSlots(o.Rounds, run.o.Parallel, func(slot, r int) *RWLockCounts {
		c := &RWLockCounts{}
		w := newRWWorld(run, slot, r+1, c)
		w.run()
		c.Digest = w.digest.Sum64()
		return c
	})
	total := &RWLockCounts{}
	for _, c := range results {
		c.Rounds = 1
		total.merge(c)
	}
	return total, nil
}

// rwIntent is one acquire a worker made (a read, a write, a plain lock,
// or a downgrade's reader), and what the checker knows of it.
type rwIntent struct {
	name     string // owner/request ID
	resource string // the lock's name
	read     bool
	// A downgrade's reader: the write lease it came from and its fence.
	downFrom  string
	downFence uint64
	joined    uint64 // the order its ticket first showed in a committed queue; 0: not yet
	vanished  bool   // its caller died waiting
	// graceUntil: the registry instant (Unix ms) until which its ticket
	// keeps its place after its wait ran out (WaiterGraceMs), for the
	// same request to ask again; nobody is handed the lease through it.
	graceUntil int64
	counted    map[string]bool
}

// rwLease is one lease on a lock as the registry committed it.
type rwLease struct {
	in    *rwIntent
	read  bool
	fence uint64
	exp   int64 // committed expiry
	// entitled: the expiry its own grant and its holder's renewals give
	// it (readers).
	entitled int64
}

// rwTruth is what the registry committed about one lock.
type rwTruth struct {
	leases      map[string]*rwLease // granted and not seen ended
	fenceMax    uint64              // highest writer's fence granted
	lastWriter  string              // the writer's lease granted last
	waiters     []lockstate.Waiter  // the queue as last committed
	freeAtMs    int64
	readersFrom int64 // ReadersFromMs as last committed
	busyMs      int64 // the last instant a lease no longer in leases kept it busy (lock-delay included)
	readBusyMs  int64 // the same, for writers' leases only (what holds a reader back)
	holdUntil   int64 // the checker's own hold-back after the last downgrade
}

type rwWorld struct {
	roundWorld
	store    *memstore.Store
	regs     []*registry.Registry
	gate     gateAdapter
	f        *setFaults
	pool     []string // the read/write locks
	plain    string   // the plain lock beside them
	lim      registry.Config
	pending  []*rwPending
	truth    map[string]*rwTruth
	intents  map[lsKey]*rwIntent
	waiting  map[*rwIntent]*rwPending
	joinSeq  uint64
	claimMs  int64
	c        *RWLockCounts
	twoSteps bool
}

// rwPending is one waiting acquire, stepped on the event queue.
type rwPending struct {
	intent     *rwIntent
	a          *registry.Acquisition
	key        lsKey
	reply      func(wire.Issued, error)
	deadline   int64
	done       bool
	tok        int
	clearSince int64 // since when no ticket it must let go first was ahead of it (-1: one is)
	// notBefore: a dead reader's ticket ahead of a writer cannot be told
	// from a live one held back by a downgrade before ReadersFromMs.
	notBefore int64
}

type rwClock struct{ w *rwWorld }

func (c rwClock) Now() time.Time { return epochBase.Add(time.Duration(c.w.now) * time.Millisecond) }

// After fires at once: every registry call runs to its end in one event.
func (c rwClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

func newRWWorld(run *setRun, slot, round int, c *RWLockCounts) *rwWorld {
	seed, neg, keys := run.o.Seed, run.o.Negative, run.keys
	s := roundSeed(seed^0x72776c6f636b73, round) // "rwlocks": apart from the other rounds' seeds
	w := &rwWorld{roundWorld: newRoundWorld(seed, s, round, neg, "--rwlock-rounds", &c.Violations), c: c,
		truth: map[string]*rwTruth{}, intents: map[lsKey]*rwIntent{}, waiting: map[*rwIntent]*rwPending{}}
	w.twoSteps = neg != nil && neg.TwoStepDowngrade
	// The set rounds' clocks, gate and settings (setfaults.go), the
	// network's faults aside; the skew bound swept too on a gate made
	// for the round (a shared database gate keeps the run's).
	w.f = drawSetFaults(s, rwRoundMsMax, run.o.NoFaults, false, &c.Net)
	kind := run.gateKind(w.f)
	w.lim = setLimits(w.f.g, run.o.NoFaults)
	if !run.o.NoFaults && !sharedGateKind(kind) {
		w.lim.ClockSkewMaxMs = uint64(w.f.g.edgy(rwSkewMsMin, SkewBoundMsMax, rwSkewMsMin, SkewBoundMsDefault, SkewBoundMsMax))
		w.lim.LockDelayMs = max(w.lim.LockDelayMs, w.lim.ClockSkewMaxMs)
		w.lim.RequestRetentionMs = 0 // filled again from the drawn skew bound
		if err := w.lim.Validate(); err != nil {
			panic("sim: drew registry settings the registry refuses: " + err.Error())
		}
	}
	w.f.boundMs = int64(w.lim.ClockSkewMaxMs)
	// The claim bound, as the lock-set rounds': a free lock's vanished
	// head is dropped within 2 × HandoffClaimMs of its last stamp and a
	// waiter looks at least every WaitPollMsMax; one more HandoffClaimMs
	// for a second ghost.
	w.claimMs = int64(3*w.lim.HandoffClaimMs + 2*w.lim.WaitPollMsMax)
	for i := range int(w.rng.between(rwPoolMin, rwPoolMax)) {
		w.pool = append(w.pool, fmt.Sprintf("rw/round-%d/r%d", round, i))
	}
	w.plain = fmt.Sprintf("rw/round-%d/plain", round)
	w.store = memstore.New()
	w.store.OnCommit(w.committed)
	for range 2 {
		var st registry.Store = w.store
		if neg != nil && neg.Store != nil {
			st = neg.Store(st)
		}
		reg, err := registry.New(st, w.lim, rwClock{w}, keys.registry, registry.WithRand(rand.NewPCG(w.rng.r.Uint64(), 1)))
		if err != nil {
			panic("sim: registry: " + err.Error())
		}
		w.regs = append(w.regs, reg)
	}
	w.gate = run.gateOf(kind, w.f, slot, round, s, w.nowMs, w.f.clock(), int64(w.lim.ClockSkewMaxMs))
	for _, r := range append(slices.Clone(w.pool), w.plain) {
		w.truth[r] = &rwTruth{leases: map[string]*rwLease{}}
	}
	for i := range int(w.rng.between(rwWorkersMin, rwWorkersMax)) {
		k := &rwWorker{w: w, id: i, name: fmt.Sprintf("worker-%d", i), reg: w.regs[i%2], ops: rwOpsPerWorker, clock: w.f.clock()}
		w.at(w.rng.between(0, 1000), k.next)
	}
	return w
}

func (w *rwWorld) run() {
	for events := 0; w.q.Len() > 0; events++ {
		e := w.q.pop()
		if e.atMs > rwRoundMsMax || events > rwEventsMax {
			w.c.Unended++
			w.violate("round-livelock", "round did not end by %d ms / %d events", rwRoundMsMax, rwEventsMax)
			return
		}
		w.now = e.atMs
		w.mix(uint64(e.atMs), e.seq)
		e.fn()
		w.judge()
	}
	for _, p := range w.pending {
		w.c.Unended++
		w.violate("wait-unanswered", "%s's wait for %s had no answer when the round ended", p.intent.name, p.intent.resource)
	}
}

// intent registers an acquire of resource under (owner, id).
func (w *rwWorld) intent(owner, id, resource string, read bool) *rwIntent {
	in := &rwIntent{name: owner + "/" + id, resource: resource, read: read}
	w.intents[lsKey{owner, id}] = in
	return in
}

// committed is the store's commit hook: the registry's ground truth for
// the round's locks, judged at once (WriterBeside, DowngradeGap,
// ReaderEarly, Jumped), and a wake for every waiting acquire of the lock
// the commit wrote (after the commit, never inside it), as its watch.
func (w *rwWorld) committed(c *memstore.Committed) {
	if !c.RecordWritten {
		return
	}
	name := c.Resource
	for _, p := range w.pending {
		if p.intent.resource == name {
			w.at(w.now, func() { w.step(p) })
		}
	}
	t := w.truth[name]
	if t == nil {
		return // a resource outside the round
	}
	rec, err := c.Record()
	if err != nil || rec == nil {
		panic("sim: the store holds a record it cannot decode")
	}
	gone := map[string]int64{} // leases this commit ended → their committed expiry
	for _, e := range rec.Ended {
		l, ok := t.leases[e.Lease]
		if !ok {
			continue
		}
		end := min(w.regNowMs(), l.exp+int64(w.lim.LockDelayMs)) // busy until its release, or its expiry and lock-delay
		gone[e.Lease] = l.exp
		t.busyMs = max(t.busyMs, end)
		if !l.read {
			t.readBusyMs = max(t.readBusyMs, end)
		} else if e.State == grant.StateExpired {
			t.readBusyMs = max(t.readBusyMs, end) // lock-delay after a reader's expiry holds readers back too
		}
		delete(t.leases, e.Lease)
	}
	t.waiters, t.freeAtMs, t.readersFrom = rec.Waiters, rec.FreeAtMs, rec.ReadersFromMs
	for _, wt := range rec.Waiters {
		if in := w.intents[lsKey{wt.Owner, wt.RequestID}]; in != nil && in.joined == 0 {
			w.joinSeq++
			in.joined = w.joinSeq
		}
	}
	var holders []lockstate.Holder
	if rec.Holder != nil {
		holders = append(holders, *rec.Holder)
	}
	holders = append(holders, rec.Readers...)
	for _, h := range holders {
		g := h.Grant
		l, known := t.leases[g.Lease]
		if !known {
			_, read := wire.ReadOf(g.Resource)
			in := w.intents[lsKey{g.Owner, g.RequestID}]
			l = &rwLease{in: in, read: read, fence: g.FenceToken, entitled: g.IssuedAtMs + int64(g.TTLMs)}
			w.granted(name, t, l, g, gone)
			t.leases[g.Lease] = l
		}
		l.exp = h.ExpiresAtMs
	}
	w.judgeBeside(name, t)
}

// granted judges a lease the commit granted on name, before it joins t.
// gone holds the leases the same commit ended, with their expiries.
func (w *rwWorld) granted(name string, t *rwTruth, l *rwLease, g lockstate.GrantBody, gone map[string]int64) {
	in := l.in
	if in == nil {
		return // not one of the workers' requests
	}
	if !l.read {
		t.fenceMax = max(t.fenceMax, g.FenceToken)
	}
	switch {
	case in.downFrom != "":
		if t.lastWriter != in.downFrom || l.fence != in.downFence {
			w.once(&in.counted, "downgrade-gap", &w.c.DowngradeGap, "%s: %s's downgrade of lease %s (fence %d) answered with a reader at fence %d after writer %s",
				name, in.name, in.downFrom, in.downFence, l.fence, t.lastWriter)
		}
		if !w.twoSteps {
			hold := w.regNowMs() + int64(w.lim.StatusProofTTLMs+w.lim.ClockSkewMaxMs)
			if exp, ok := gone[in.downFrom]; ok {
				hold = min(hold, exp) // never past the write lease's expiry
			}
			t.holdUntil = max(t.holdUntil, hold)
		}
		return // the downgrader's own reader jumps nobody
	case l.read && g.IssuedAtMs < t.holdUntil:
		w.once(&in.counted, "reader-early", &w.c.ReaderEarly, "%s: reader %s granted %d ms before a downgrade's statements expired", name, in.name, t.holdUntil-g.IssuedAtMs)
	}
	if !l.read {
		t.lastWriter = g.Lease
	}
	w.judgeJump(name, t, in)
}

// judgeJump checks the lease just granted to in on name against the
// queue the same commit left: no still-waiting acquire whose ticket
// joined before in's (before in asked, when in never queued) may still
// wait there, when either of the two is a writer.
func (w *rwWorld) judgeJump(name string, t *rwTruth, in *rwIntent) {
	for _, wt := range t.waiters {
		x := w.intents[lsKey{wt.Owner, wt.RequestID}]
		if x == nil || x == in || w.waiting[x] == nil || x.joined == 0 || in.joined != 0 && x.joined >= in.joined {
			continue
		}
		if !x.read || !in.read {
			w.once(&in.counted, "jumped", &w.c.Jumped, "%s: %s (read %t) granted past %s (read %t), queued before it and still waiting", name, in.name, in.read, x.name, x.read)
			return
		}
	}
}

// judgeBeside checks that no writer's live lease on name has another
// live lease beside it, by the registry clock now.
func (w *rwWorld) judgeBeside(name string, t *rwTruth) {
	live := w.liveOn(t)
	if len(live) < 2 {
		return
	}
	for _, lease := range live {
		l := t.leases[lease]
		if l.read || l.in == nil {
			continue
		}
		w.once(&l.in.counted, "writer-beside", &w.c.WriterBeside, "%s: writer %s (lease %s, fence %d) live beside %d other lease(s): %v", name, l.in.name, lease, l.fence, len(live)-1, live)
	}
}

// liveOn lists t's leases live by the registry clock now, in lease order.
func (w *rwWorld) liveOn(t *rwTruth) []string {
	var out []string
	for lease, l := range t.leases {
		if l.exp > w.regNowMs() {
			out = append(out, lease)
		}
	}
	slices.Sort(out)
	return out
}

// judge runs after every event: a reader's lease live past the TTL its
// own grant and renewals gave it plus lock-delay (ReaderPastTTL), and
// since when each waiting acquire has had no ticket ahead that it must
// let go first (exact: that changes only at events).
func (w *rwWorld) judge() {
	now := w.regNowMs()
	for _, name := range w.pool {
		t := w.truth[name]
		var past []string
		for lease, l := range t.leases {
			if l.read && l.in != nil && now >= l.entitled+int64(w.lim.LockDelayMs) && l.exp > now {
				past = append(past, lease)
			}
		}
		slices.Sort(past) // the violations' order is the run's
		for _, lease := range past {
			l := t.leases[lease]
			w.once(&l.in.counted, "reader-past-ttl", &w.c.ReaderPastTTL, "%s: reader %s (lease %s) still live %d ms past its own TTL, lock-delay included (expiry %d ms on)",
				name, l.in.name, lease, now-l.entitled-int64(w.lim.LockDelayMs), l.exp-l.entitled)
		}
	}
	for _, p := range w.pending {
		none, notBefore := w.noneAhead(p)
		p.notBefore = max(p.notBefore, notBefore) // a ticket that held p back keeps doing so after it left the queue
		switch {
		case !none:
			p.clearSince = -1
		case p.clearSince < 0:
			p.clearSince = w.now
		}
	}
}

// noneAhead reports whether p's lock's queue has no ticket ahead of p's
// own (anywhere in it when p has none there) from a still-waiting
// acquire p must let go first: any, for a writer; a writer's, for a
// reader. notBefore is the registry instant before which a dead
// waiter's ticket ahead still holds p back: ReadersFromMs, for a dead
// reader's ahead of a writer (the registry cannot tell it from a live
// reader held back by a downgrade, and counts its claim window from
// there); 0 otherwise.
func (w *rwWorld) noneAhead(p *rwPending) (none bool, notBefore int64) {
	t := w.truth[p.intent.resource]
	for _, wt := range t.waiters {
		k := lsKey{wt.Owner, wt.RequestID}
		if k == p.key {
			return true, notBefore
		}
		if x := w.intents[k]; x != nil && x.vanished && x.read && !p.intent.read {
			notBefore = max(notBefore, t.readersFrom)
		}
		in := w.intents[k]
		if in == nil || in == p.intent || p.intent.read && in.read {
			continue
		}
		// A ticket in its grace after its wait ran out holds its place
		// (writer preference included) until the grace ends.
		notBefore = max(notBefore, in.graceUntil)
		// A ticket of a still-waiting acquire; or a dead waiter's while
		// the lock is held (the registry cannot tell it from a live one
		// until the lock is free: then it must skip it within the claim
		// window).
		if w.waiting[in] != nil || in.vanished && len(w.liveOn(t)) > 0 {
			return false, 0
		}
	}
	return true, notBefore
}

// clearAtMs is the registry instant from which the lock has been clear
// for a reader (read) or a writer, as far as the committed leases say:
// past every lock-delay, the downgrade hold-back for a reader, and no
// live lease that excludes it (in the future while one lives).
func (w *rwWorld) clearAtMs(t *rwTruth, read bool) int64 {
	now, delay := w.regNowMs(), int64(w.lim.LockDelayMs)
	at := max(t.freeAtMs, t.busyMs)
	if read {
		at = max(t.freeAtMs, t.readBusyMs, t.readersFrom)
	}
	for _, l := range t.leases {
		if !read || !l.read || l.exp <= now {
			at = max(at, l.exp+delay)
		}
	}
	return at
}

// clearMs is how long p's lock has been clear for it — clearAtMs, and
// no ticket ahead it must let go first — by the registry clock now; -1
// when it is not.
func (w *rwWorld) clearMs(p *rwPending) int64 {
	w.judge()
	if p.clearSince < 0 {
		return -1
	}
	since := max(epochBase.UnixMilli()+p.clearSince, w.clearAtMs(w.truth[p.intent.resource], p.intent.read), p.notBefore)
	return max(w.regNowMs()-since, -1)
}

// wait steps p now and then on its lock's commits and at its WakeAt
// (never at WakeAt under the no-poll control), until it has its answer.
func (w *rwWorld) wait(p *rwPending) {
	p.clearSince = -1
	w.pending = append(w.pending, p)
	w.waiting[p.intent] = p
	w.step(p)
}

func (w *rwWorld) step(p *rwPending) {
	if p.done {
		return
	}
	clear := w.clearMs(p) // as it stood when the step began
	if p.a.Step(context.Background(), false) {
		w.end(p)
		w.c.ClearMsMax = max(w.c.ClearMsMax, clear)
		if clear > w.claimMs {
			w.c.Stuck++
			w.violate("rw-stuck", "%s's wait for %s (read %t) answered with the lock clear for it for %d ms (claim bound %d ms)", p.intent.name, p.intent.resource, p.intent.read, clear, w.claimMs)
		}
		is, err := p.a.Result()
		if errors.Is(err, wire.ErrWaitTimeout) {
			p.intent.graceUntil = w.regNowMs() + int64(w.lim.WaiterGraceMs)
		}
		p.reply(is, err)
		return
	}
	p.tok++
	wake := p.a.WakeAt().UnixMilli() - epochBase.UnixMilli()
	if w.neg != nil && w.neg.NoPoll {
		wake = p.deadline // only the caller's own deadline ends the wait
	}
	if w.neg != nil && w.neg.NoWake {
		return // only a commit of its lock steps it again
	}
	tok := p.tok
	w.at(max(wake, w.now+1), func() {
		if tok == p.tok {
			w.step(p)
		}
	})
}

func (w *rwWorld) end(p *rwPending) {
	p.done = true
	if i := slices.Index(w.pending, p); i >= 0 {
		w.pending = slices.Delete(w.pending, i, i+1)
	}
	if w.waiting[p.intent] == p {
		delete(w.waiting, p.intent)
	}
}

// giveUp abandons p if it still waits: its ticket is withdrawn.
func (w *rwWorld) giveUp(p *rwPending) {
	if p.done {
		return
	}
	p.a.Abandon(context.Background())
	w.end(p)
	w.c.Abandoned++
	w.mix(0xab)
	p.reply(wire.Issued{}, errAbandoned)
}

// vanish ends p's caller while it waits, if it still does: its ticket
// is left behind, never withdrawn. It reports whether it did.
func (w *rwWorld) vanish(p *rwPending) bool {
	if p.done {
		return false
	}
	w.end(p)
	p.intent.vanished = true
	// Its ticket, once its wait is over, is the registry's to skip as
	// any ran-out wait's: it keeps its place for WaiterGraceMs more.
	p.intent.graceUntil = epochBase.UnixMilli() + p.deadline + int64(w.lim.WaiterGraceMs)
	w.c.Vanished++
	w.mix(0xdead)
	return true
}

// answered accounts an acquire's answer: the digest, and a wait that ran
// out or an error. It reports whether the acquire was granted.
func (w *rwWorld) answered(is wire.Issued, err error) bool {
	var fence uint64
	if is.Grant != nil {
		fence = is.Grant.FenceToken
	}
	w.mix(uint64(len(wire.CodeOf(err))), fence)
	switch {
	case err == nil:
		return true
	case errors.Is(err, errAbandoned):
	case errors.Is(err, wire.ErrWaitTimeout):
		w.c.RanOut++
	default:
		w.c.Refused++
		w.violate("rw-refused", "an acquire was refused: %v", err)
	}
	return false
}

// mutation is one segment's envelope under is, naming resource.
func mutation(is wire.Issued, resource, op string) *gate.Mutation {
	g := is.Grant
	m := &gate.Mutation{
		Resource: resource, Lease: g.Lease, OperationID: op, FenceToken: g.FenceToken, SegmentSeq: 1,
		PayloadDigest: payloadDigest(op, 1, 0), Grant: g.Encode(), GrantProof: is.GrantProof,
	}
	if st := is.Status; st != nil {
		m.Status, m.StatusProof = st.Encode(), is.StatusProof
	}
	return m
}

// write sends one segment under the writer's grant is at its lock's
// gate and checks an accept against the registry's truth.
func (w *rwWorld) write(owner string, is wire.Issued, op string) {
	g := is.Grant
	w.c.GateWrites++
	ran := false
	_, err := w.gate.apply(mutation(is, g.Resource, op), owner, func() { ran = true })
	w.mix(uint64(len(gate.OutcomeOf(err))), g.FenceToken)
	if !ran {
		return
	}
	w.c.Accepted++
	if t := w.truth[g.Resource]; g.FenceToken < t.fenceMax {
		w.c.Stale++
		w.violate("rw-stale-accepted", "%s: %s's write at fence %d accepted after fence %d was granted (%v)", g.Resource, owner, g.FenceToken, t.fenceMax, err)
	}
}

// readerWrite tries one segment under the reader's grant is at its
// lock's gate, the envelope naming the reader's resource or (asLock) the
// lock itself: the gate must refuse it READ_GRANT.
func (w *rwWorld) readerWrite(owner string, is wire.Issued, op string, asLock bool) {
	g := is.Grant
	name := wire.RecordName(g.Resource)
	resource := g.Resource
	if asLock {
		resource = name
	}
	w.c.ReaderWrites++
	ran := false
	_, err := w.gate.apply(mutation(is, resource, op), owner, func() { ran = true })
	out := gate.OutcomeOf(err)
	w.mix(uint64(len(out)), g.FenceToken)
	switch {
	case ran:
		w.c.ReaderMutation++
		w.violate("reader-mutation", "%s: %s's reader grant (fence %d) accepted as a mutation of %s", name, owner, g.FenceToken, resource)
	case out != gate.ReadGrant:
		w.c.ReaderMutation++
		w.violate("reader-mutation", "%s: %s's reader grant presented for %s refused %s, not %s", name, owner, resource, out, gate.ReadGrant)
	default:
		w.c.ReadGrantRefused++
	}
}
