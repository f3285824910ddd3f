package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

// This file is the semaphore rounds (issue 46): workers pick a counting
// semaphore of N permits (N drawn over the whole accepted range,
// [wire.PermitsMin, wire.PermitsMax], log-uniformly with the ends and 2
// weighted) or a plain lock beside it, and run the product's registry (two replicas over one
// memstore, their waiting acquires stepped as registry.Acquisition on the
// round's event queue, the semaphore's queue and slots the registry's
// own) and a real gate (gate/memgate) keyed on each grant's resource: a
// permit writes through its slot's gate. A worker's TTL is drawn from the
// registry's accepted range (the settings sweep), and a share of holders
// freeze past their TTL and lock-delay before they write: the stale
// writer. Ground truth is what the registry committed (the store's
// commit hook), judged by the registry clock.
//
// The rounds run under the faults setfaults.go draws: the network between
// workers and the registry (lost requests and answers, the request resent
// as it is under the same request ID, copies, delays), skewed worker and
// gate clocks, the gate drawn among memgate, sqlgate and objgate (pggate
// with SetOptions.PG), and the registry's settings drawn over their
// ranges. A worker that gives up on an acquire (every send unanswered)
// cancels it at the registry as a closed connection does, by a message
// that may be lost too.
//
// A semaphore round does not drive the client's lease core: a worker
// holds each grant for less than its TTL (no renewal) and builds its one
// segment's envelope from the grant as the SDK does (client/core's
// envelope: the grant, its proof, and its status when the answer had one).
//
// Checker properties, each 0 in a correct run:
//   - SemOverN: more live holders of a semaphore than its permits;
//   - SemSlotTwice: a slot (or the plain lock) granted while another lease
//     on it was live;
//   - SemStale: a write accepted at a slot's (or the plain lock's) gate
//     with a fence below one the registry had granted there before.

// Semaphore round limits and rates, in simulated ms.
const (
	semWorkersExtra = 2 // workers beyond the permits, so some wait
	semOpsPerWorker = 3
	semPlainShare   = 0.3  // a worker's share of plain-lock operations
	semFreezeShare  = 0.25 // a grant's holder freezes past its TTL before writing
	semWaitMsMin    = 2000
	semRoundMsMax   = 60 * 60 * 1000
	semEventsMax    = 400_000
)

// SemaphoreCounts is what the semaphore rounds measured.
type SemaphoreCounts struct {
	Rounds, Grants, Permits, Writes, Accepted, Frozen int
	// GaveUp counts acquires a worker gave up on, every send unanswered.
	GaveUp int
	// Safety: each must be 0.
	SemOverN, SemSlotTwice, SemStale int
	// Unended (liveness) counts rounds cut off at semRoundMsMax or
	// semEventsMax and acquires unanswered when their round ended: 0.
	Unended    int
	Net        NetCounts
	Violations []Violation
	Digest     uint64
}

// OK reports whether every safety and liveness count is 0.
func (c *SemaphoreCounts) OK() bool {
	return c.SemOverN == 0 && c.SemSlotTwice == 0 && c.SemStale == 0 && c.Unended == 0
}

// Bad is the sum of the counts OK requires to be 0.
func (c *SemaphoreCounts) Bad() int { return c.SemOverN + c.SemSlotTwice + c.SemStale + c.Unended }

// RunSemaphores runs rounds semaphore rounds of seed, with the negative
// control neg (Shadow: the lease-only gate; Store: the registry's store
// replaced) if any, on parallel goroutines (0: one per core). Rounds are
// independent worlds seeded from (seed, round) and merged in round order,
// so parallel changes only the speed, never a count or the digest.
func RunSemaphores(seed uint64, rounds, parallel int, neg *Negative) (*SemaphoreCounts, error) {
	return RunSemaphoresWith(SetOptions{Seed: seed, Rounds: rounds, Parallel: parallel, Negative: neg})
}

// RunSemaphoresWith runs the semaphore rounds o names.
func RunSemaphoresWith(o SetOptions) (*SemaphoreCounts, error) {
	run, err := newSetRun(o)
	if err != nil {
		return nil, err
	}
	defer run.close()
	results := inParallelSlots(o.Rounds, run.o.Parallel, func(slot, r int) *SemaphoreCounts {
		c := &SemaphoreCounts{}
		w := newSemWorld(run, slot, r+1, c)
		w.run()
		c.Digest = w.digest.Sum64()
		return c
	})
	total := &SemaphoreCounts{}
	for _, c := range results {
		total.Rounds++
		total.Grants += c.Grants
		total.Permits += c.Permits
		total.Writes += c.Writes
		total.Accepted += c.Accepted
		total.Frozen += c.Frozen
		total.SemOverN += c.SemOverN
		total.SemSlotTwice += c.SemSlotTwice
		total.SemStale += c.SemStale
		total.GaveUp += c.GaveUp
		total.Unended += c.Unended
		total.Net.add(&c.Net)
		for _, v := range c.Violations {
			if len(total.Violations) < ViolationsMax {
				total.Violations = append(total.Violations, v)
			}
		}
		total.Digest = mixDigest(total.Digest, c.Digest)
	}
	return total, nil
}

// slotTruth is what the registry committed about one resource's leases.
type slotTruth struct {
	expires  map[string]int64 // lease → committed expiry, for leases granted and not ended
	fenceMax uint64           // highest fence granted
}

type semWorld struct {
	roundWorld
	store   *memstore.Store
	regs    []*registry.Registry
	gate    gateAdapter
	f       *setFaults
	name    string // the semaphore
	plain   string // the plain lock beside it
	permits int
	lim     registry.Config
	pending []*semPending
	running map[string][]*semPending // owner/request ID → its acquires at the registry still waiting
	truth   map[string]*slotTruth
	c       *SemaphoreCounts
}

type semPending struct {
	key   string // owner/request ID
	a     *registry.Acquisition
	done  bool
	tok   int
	reply func(wire.Issued, error)
}

type semClock struct{ w *semWorld }

func (c semClock) Now() time.Time { return epochBase.Add(time.Duration(c.w.now) * time.Millisecond) }

// After fires at once: every registry call runs to its end in one event.
func (c semClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

func newSemWorld(run *setRun, slot, round int, c *SemaphoreCounts) *semWorld {
	seed, neg, keys := run.o.Seed, run.o.Negative, run.keys
	s := roundSeed(seed^0x73656d61, round) // "sema": apart from the lock rounds' seeds
	w := &semWorld{roundWorld: newRoundWorld(seed, s, round, neg, "--semaphore-rounds", &c.Violations), c: c, truth: map[string]*slotTruth{},
		running: map[string][]*semPending{}}
	w.name, w.plain = fmt.Sprintf("sem/round-%d", round), fmt.Sprintf("sem/round-%d-plain", round)
	w.permits = int(w.rng.edgy(wire.PermitsMin, wire.PermitsMax, wire.PermitsMin, 2, wire.PermitsMax))
	w.store = memstore.New()
	w.store.OnCommit(w.committed)
	w.f = newSetFaults(s, semRoundMsMax, run.o.NoFaults, &c.Net)
	w.lim = setLimits(w.f.g, run.o.NoFaults)
	for range 2 {
		var st registry.Store = w.store
		if neg != nil && neg.Store != nil {
			st = neg.Store(st)
		}
		reg, err := registry.New(st, w.lim, semClock{w}, keys.registry, registry.WithRand(rand.NewPCG(w.rng.r.Uint64(), 1)))
		if err != nil {
			panic("sim: registry: " + err.Error())
		}
		w.regs = append(w.regs, reg)
	}
	w.gate = run.gate(w.f, slot, round, s, w.nowMs, w.f.clock())
	for i := range w.permits + semWorkersExtra {
		k := &semWorker{w: w, id: i, name: fmt.Sprintf("worker-%d", i), reg: w.regs[i%2], ops: semOpsPerWorker, clock: w.f.clock(),
			callMs: w.f.g.edgy(callTimeoutMsMin, callTimeoutMsMax, callTimeoutMsMin, callTimeoutMsMax)}
		w.at(w.rng.between(0, 1000), k.next)
	}
	return w
}

func (w *semWorld) run() {
	for events := 0; w.q.Len() > 0; events++ {
		e := w.q.pop()
		if e.atMs > semRoundMsMax || events > semEventsMax {
			w.c.Unended++
			w.violate("round-livelock", "round did not end by %d ms / %d events", semRoundMsMax, semEventsMax)
			return
		}
		w.now = e.atMs
		w.mix(uint64(e.atMs), e.seq)
		e.fn()
	}
	for _, p := range w.pending {
		w.c.Unended++
		w.violate("wait-unanswered", "%s's acquire had no answer when the round ended", p.key)
	}
}

// committed is the store's commit hook: the registry's ground truth for
// the semaphore's slots and the plain lock, and a wake for every waiting
// acquire (after the commit, never inside it).
func (w *semWorld) committed(c *memstore.Committed) {
	for _, p := range w.pending {
		w.at(w.now, func() { w.step(p) })
	}
	name, _, slot := wire.SlotOf(c.Resource)
	if !c.RecordWritten || !(slot && name == w.name || c.Resource == w.plain) {
		return
	}
	rec, err := c.Record()
	if err != nil || rec == nil {
		panic("sim: the store holds a record it cannot decode")
	}
	t := w.truth[c.Resource]
	if t == nil {
		t = &slotTruth{expires: map[string]int64{}}
		w.truth[c.Resource] = t
	}
	for _, e := range rec.Ended {
		delete(t.expires, e.Lease)
	}
	h := rec.Holder
	if h == nil {
		return
	}
	if _, known := t.expires[h.Grant.Lease]; !known {
		for _, other := range w.liveOn(t) {
			if other != h.Grant.Lease {
				w.c.SemSlotTwice++
				w.violate("slot-held-twice", "%s granted to %s (fence %d) while lease %s was live", c.Resource, h.Grant.Lease, h.Grant.FenceToken, other)
			}
		}
		t.fenceMax = max(t.fenceMax, h.Grant.FenceToken)
	}
	t.expires[h.Grant.Lease] = h.ExpiresAtMs
	if slot {
		held := 0
		for i := range w.permits {
			if t := w.truth[wire.SlotResource(w.name, i)]; t != nil {
				held += len(w.liveOn(t))
			}
		}
		if held > w.permits {
			w.c.SemOverN++
			w.violate("semaphore-over-n", "%s has %d live holders, %d permits", w.name, held, w.permits)
		}
	}
}

// liveOn lists t's leases live by the registry clock now, in lease order.
func (w *semWorld) liveOn(t *slotTruth) []string {
	var out []string
	for l, exp := range t.expires {
		if exp > w.regNowMs() {
			out = append(out, l)
		}
	}
	if len(out) > 1 {
		sortStrings(out)
	}
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// serve starts an acquire on reg, stepped on commits and at its wake.
func (w *semWorld) serve(reg *registry.Registry, owner string, req wire.AcquireRequest, reply func(wire.Issued, error)) {
	a, err := reg.StartAcquire(owner, req)
	if err != nil {
		reply(wire.Issued{}, err)
		return
	}
	p := &semPending{key: owner + "/" + req.RequestID, a: a, reply: reply}
	w.pending = append(w.pending, p)
	w.running[p.key] = append(w.running[p.key], p)
	w.step(p)
}

// end takes p off the acquires waiting.
func (w *semWorld) end(p *semPending) {
	p.done = true
	w.pending = slices.DeleteFunc(w.pending, func(q *semPending) bool { return q == p })
	w.running[p.key] = slices.DeleteFunc(w.running[p.key], func(q *semPending) bool { return q == p })
}

// cancel abandons every acquire of key still waiting at the registry, as
// the caller's closed connection does: its tickets are withdrawn.
func (w *semWorld) cancel(key string) {
	for _, p := range slices.Clone(w.running[key]) {
		if !p.done {
			p.a.Abandon(context.Background())
			w.end(p)
			w.mix(0xab)
		}
	}
}

func (w *semWorld) step(p *semPending) {
	if p.done {
		return
	}
	if p.a.Step(context.Background(), false) {
		w.end(p)
		is, err := p.a.Result()
		var fence uint64
		if is.Grant != nil {
			fence = is.Grant.FenceToken
		}
		w.mix(fence, uint64(len(wire.CodeOf(err))))
		p.reply(is, err)
		return
	}
	p.tok++
	tok := p.tok
	w.at(max(p.a.WakeAt().UnixMilli()-epochBase.UnixMilli(), w.now+1), func() {
		if tok == p.tok {
			w.step(p)
		}
	})
}

// write sends one segment under is at its resource's gate and checks the
// decision against the registry's truth.
func (w *semWorld) write(owner string, is wire.Issued, op string) {
	g := is.Grant
	w.c.Writes++
	ran, err := setWrite(w.gate, owner, is, op)
	w.mix(uint64(len(gate.OutcomeOf(err))), g.FenceToken)
	if !ran {
		return
	}
	w.c.Accepted++
	if t := w.truth[g.Resource]; t != nil && g.FenceToken < t.fenceMax {
		w.c.SemStale++
		w.violate("stale-accepted", "%s: %s's write at fence %d accepted after fence %d was granted (%v)", g.Resource, owner, g.FenceToken, t.fenceMax, err)
	}
}

// semWorker takes a permit (or the plain lock), holds it for a moment —
// or freezes past its TTL and lock-delay — writes one segment through the
// gate, and releases; semOpsPerWorker times.
type semWorker struct {
	w      *semWorld
	id     int
	name   string
	reg    *registry.Registry
	ops    int
	reqN   int
	clock  partyClock // the worker's own
	callMs int64      // its call timeout, on its clock
}

// timer runs fn after localMs of the worker's clock.
func (k *semWorker) timer(localMs int64, fn func()) {
	k.w.at(k.w.now+k.clock.durationMs(localMs), fn)
}

// acquire sends req to the registry until an answer comes back, resent
// as it is after its wait and call timeout, setTriesMax times at most;
// then it cancels the acquire at the registry and gives up.
func (k *semWorker) acquire(req wire.AcquireRequest, reply func(wire.Issued, error)) {
	w := k.w
	type answer struct {
		is  wire.Issued
		err error
	}
	setCallDo(w.f, w, k.timer, int64(req.WaitMs)+k.callMs, setTriesMax, func(back func(answer)) {
		w.serve(k.reg, k.name, req, func(is wire.Issued, err error) { back(answer{is, err}) })
	}, func(a answer, ok bool) {
		if !ok {
			w.c.GaveUp++
			w.f.request(w, func() { w.cancel(k.name + "/" + req.RequestID) })
			a.err = errGaveUp
		}
		reply(a.is, a.err)
	})
}

// release sends the release until it is answered, setCallTriesMax times
// at most (then the lease ends by its TTL).
func (k *semWorker) release(g *grant.Grant) {
	w := k.w
	setCallDo(w.f, w, k.timer, k.callMs, setCallTriesMax, func(back func(error)) {
		back(k.reg.Release(context.Background(), k.name, g.Resource, g.Lease))
	}, func(error, bool) {})
}

func (k *semWorker) next() {
	if k.ops == 0 {
		return
	}
	k.ops--
	k.reqN++
	w := k.w
	req := wire.AcquireRequest{Resource: w.name, Permits: uint64(w.permits), OperationClass: "settle",
		RequestID: fmt.Sprintf("req-%d-%d", k.id, k.reqN), OperationID: fmt.Sprintf("op-%d-%d", k.id, k.reqN),
		TTLMs:  uint64(w.rng.edgy(int64(w.lim.TTLMsMin), int64(w.lim.TTLMsMax), int64(w.lim.TTLMsMin), int64(w.lim.TTLMsMax))),
		WaitMs: uint64(w.rng.edgy(semWaitMsMin, int64(w.lim.WaitMsMax), semWaitMsMin, int64(w.lim.WaitMsMax)))}
	if w.rng.chance(semPlainShare) {
		req.Resource, req.Permits = w.plain, 0
	}
	k.acquire(req, func(is wire.Issued, err error) {
		if err != nil {
			k.timer(w.rng.between(150, 300), k.next)
			return
		}
		w.c.Grants++
		if req.Permits > 0 {
			w.c.Permits++
		}
		holdMs := w.rng.between(computeMsMin, computeMsMax)
		if w.rng.chance(semFreezeShare) {
			// Frozen past its lease and the lock-delay, then it writes
			// as if nothing happened: the gate must refuse it once the
			// slot has a newer fence.
			w.c.Frozen++
			holdMs = int64(is.Grant.TTLMs+w.lim.LockDelayMs) + w.rng.between(0, 4000)
		}
		k.timer(holdMs, func() {
			w.write(k.name, is, req.OperationID)
			k.release(is.Grant)
			k.timer(w.rng.between(0, 500), k.next)
		})
	})
}
