package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/memgate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// This file is what the lock-set and semaphore rounds (issue 46) share
// with the lock rounds' faults and settings, drawn per round from a
// stream of their own (the read/write lock rounds draw all but the
// network's faults):
//
//   - the network between workers and the registry (network.go's shapes):
//     every call and answer after a one-way delay, a share slow; in a
//     round with network faults (setNetRate) a share of requests lost, a
//     share of answers lost, a share of requests delivered twice (the copy
//     trailing, some seconds late in a share of those rounds). A worker
//     that has no answer after its call's wait plus its call timeout (its
//     own clock) resends the request as it is, under the same request ID,
//     as the SDK does (client.Session's drive); a registry call of a
//     request it has answered answers from the request's entry;
//   - clocks: each worker's and the gate's clock skewed and drifting
//     within the deployment's skew bound (partyClock, as FaultSkew), over
//     the round's longest life;
//   - the gate: gate/memgate, gate/sqlgate on SQLite (one in-memory
//     database per goroutine) or gate/objgate (two gates with their own
//     manifest caches in front of one in-memory bucket), drawn per round;
//     with SetOptions.PG, gate/pggate too (every round's proofs are
//     HMAC-SHA256, as the lock rounds' by default);
//   - the registry's settings: HandoffClaimMs, LockDelayMs, WaitPollMsMax,
//     WaiterGraceMs and StatusProofTTLMs drawn over their ranges, the ends
//     weighted (setLimits), and each request's TTL over the registry's
//     whole range.
//
// What they do not have yet: the restore of the store from an older
// snapshot (the lock rounds' FaultRestore). Its checker would have to
// judge a member or slot granted again across a history's end as the
// lock rounds' checker does (checker.restored); what a restored store
// owes a lock set whose grant it forgot (the set's members revived one by
// one? its request IDs answered from a record that no longer holds some
// of them?) is a product decision not made yet (DESIGN.md).

// SetOptions is a run of lock-set or semaphore rounds.
type SetOptions struct {
	Seed     uint64
	Rounds   int
	Parallel int       // goroutines; 0: one per core. Results do not depend on it.
	Negative *Negative // the negative control, or nil
	// Gate, when not "", runs every round on that gate ("mem", "sql",
	// "obj" or "pg") instead of drawing one per round.
	Gate string
	// PG adds gate/pggate to the gates drawn, on fresh databases of the
	// server PGDSN names ("": the PG* environment variables).
	PG    bool
	PGDSN string
	// NoFaults runs the rounds as before the faults: no network faults,
	// clocks without skew, memgate, the default settings (for a
	// comparison; not a proof).
	NoFaults bool
}

// Per-round rates and shares of the set rounds' faults.
const (
	setNetRate       = 0.5  // rounds with network faults
	setLostShareMax  = 0.15 // a round's share of lost requests, and of lost answers, drawn up to this
	setDupShareMax   = 0.15 // a round's share of requests delivered twice
	setLateRate      = 0.3  // of the network-fault rounds: copies and a share of messages seconds late
	setSkewRate      = 0.8  // rounds whose clocks are skewed
	setTriesMax      = 4    // an acquire is sent this often at most before the worker gives up
	setCallTriesMax  = 3    // a renewal or release is sent this often at most
	setFaultStream   = 0x7365746661756c74
	setGateKindsBase = 3 // mem, sql, obj; pg beside them with SetOptions.PG
)

// NetCounts is what the set rounds' network and clocks did.
type NetCounts struct {
	FaultRounds, RequestsLost, AnswersLost, Resent, Copies, SkewedRounds int
	// GateRounds counts rounds by gate: mem, sql, obj, pg.
	GateRounds [4]int
	// SkewMsMax is the largest |skew| a party's clock had at a call.
	SkewMsMax int64
}

func (n *NetCounts) add(o *NetCounts) {
	n.FaultRounds += o.FaultRounds
	n.RequestsLost += o.RequestsLost
	n.AnswersLost += o.AnswersLost
	n.Resent += o.Resent
	n.Copies += o.Copies
	n.SkewedRounds += o.SkewedRounds
	for i := range n.GateRounds {
		n.GateRounds[i] += o.GateRounds[i]
	}
	n.SkewMsMax = max(n.SkewMsMax, o.SkewMsMax)
}

// String is the counts in a report line's words.
func (n *NetCounts) String() string {
	return fmt.Sprintf("network faults in %d rounds (%d requests lost, %d answers lost, %d resent, %d copies), skewed clocks in %d (largest %d ms), gates mem/sql/obj/pg %d/%d/%d/%d",
		n.FaultRounds, n.RequestsLost, n.AnswersLost, n.Resent, n.Copies, n.SkewedRounds, n.SkewMsMax, n.GateRounds[0], n.GateRounds[1], n.GateRounds[2], n.GateRounds[3])
}

// gateNames are the gate kinds, in NetCounts.GateRounds' order.
var gateNames = []string{"mem", "sql", "obj", "pg"}

// setEnv is what one goroutine of a set run keeps across its rounds:
// its SQLite (or PostgreSQL) database and gate.
type setEnv struct {
	sql, pg *sqlEnv
}

func (e *setEnv) close() {
	if e.sql != nil {
		e.sql.close()
	}
	if e.pg != nil {
		e.pg.close()
	}
}

// setRun is a run of set rounds: its options, keys and one environment
// per goroutine.
type setRun struct {
	o    SetOptions
	keys *keySet
	cfg  *Config // the gates' configuration (mode, PG server, skew bound)
	envs []*setEnv
}

func newSetRun(o SetOptions) (*setRun, error) {
	if o.Gate != "" && !containsString(gateNames, o.Gate) {
		return nil, fmt.Errorf("sim: gate %q (mem, sql, obj or pg)", o.Gate)
	}
	if o.Negative != nil && o.Negative.MemgateOnly {
		if o.Gate != "" && o.Gate != "mem" {
			return nil, fmt.Errorf("sim: --break %s runs only on gate/memgate", o.Negative.Name)
		}
		o.Gate = "mem"
	}
	if o.NoFaults && o.Gate == "" {
		o.Gate = "mem"
	}
	o.PG = o.PG || o.Gate == "pg"
	// HMAC-SHA256, as the lock rounds by default: the algorithm changes
	// no decision (TestAlgorithmDoesNotChangeDecisions), a database
	// checks no Ed25519, and it leaves the rounds' time to their faults.
	alg := grant.AlgHMACSHA256
	keys, err := newKeySet(alg, SkewBoundMsDefault*time.Millisecond)
	if err != nil {
		return nil, err
	}
	cfg := &Config{Negative: o.Negative, SkewBoundMs: SkewBoundMsDefault, PG: o.PG, PGDSN: o.PGDSN, Alg: alg}
	r := &setRun{o: o, keys: keys, cfg: cfg}
	if o.Parallel <= 0 {
		o.Parallel = defaultParallel()
		r.o.Parallel = o.Parallel
	}
	needSQL := o.Gate == "" || o.Gate == "sql"
	for range o.Parallel {
		e := &setEnv{}
		r.envs = append(r.envs, e)
		if needSQL {
			if e.sql, err = newSQLEnv(keys.gatePolicy(o.Negative), &Config{Negative: o.Negative}); err != nil {
				r.close()
				return nil, err
			}
		}
		if o.PG {
			if e.pg, err = newPGEnv(cfg, keys); err != nil {
				r.close()
				return nil, err
			}
		}
	}
	return r, nil
}

func (r *setRun) close() {
	for _, e := range r.envs {
		e.close()
	}
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// setFaults is one set round's faults, drawn from a stream of its own.
type setFaults struct {
	g                     rng
	net                   bool
	lostReq, lostAns, dup float64
	late                  bool
	skew                  bool
	boundMs               int64
	horizonMs             int64 // the round's longest life: the drift stays within the bound over it
	c                     *NetCounts
}

func newSetFaults(seed uint64, horizonMs int64, off bool, c *NetCounts) *setFaults {
	return drawSetFaults(seed, horizonMs, off, true, c)
}

// drawSetFaults is newSetFaults; without net, the round's network has
// its delays but no faults (nothing lost, no copies), and no draw is
// made for them.
func drawSetFaults(seed uint64, horizonMs int64, off, net bool, c *NetCounts) *setFaults {
	f := &setFaults{g: newRNG(seed ^ setFaultStream), boundMs: SkewBoundMsDefault, horizonMs: horizonMs, c: c}
	if off {
		return f
	}
	if f.net = net && f.g.chance(setNetRate); f.net {
		c.FaultRounds++
		f.lostReq = f.g.float(0, setLostShareMax)
		f.lostAns = f.g.float(0, setLostShareMax)
		f.dup = f.g.float(0, setDupShareMax)
		f.late = f.g.chance(setLateRate)
	}
	if f.skew = f.g.chance(setSkewRate); f.skew {
		c.SkewedRounds++
	}
	return f
}

// clock draws a party's clock: skewed and drifting within the bound over
// the round's horizon in a skewed round, the registry's otherwise.
func (f *setFaults) clock() partyClock {
	var c partyClock
	if f.skew {
		bound := float64(f.boundMs)
		driftPpmMax := skewDriftShare * bound / float64(f.horizonMs) * 1e6
		c.offsetMs = f.g.float(-skewOffsetShare*bound, skewOffsetShare*bound)
		c.driftPpm = f.g.float(-driftPpmMax, driftPpmMax)
		f.c.SkewMsMax = max(f.c.SkewMsMax, int64(math.Abs(c.offsetMs)+math.Abs(c.driftPpm)*float64(f.horizonMs)/1e6))
	}
	return c
}

// delayMs draws one message's one-way delay (network.go's shapes).
func (f *setFaults) delayMs() int64 {
	switch {
	case f.late && f.g.chance(lateShare):
		return f.g.between(lateDelayMsMin, lateDelayMsMax)
	case f.g.chance(slowShare):
		return f.g.between(delayMsMax, slowDelayMsMax)
	}
	return f.g.between(delayMsMin, delayMsMax)
}

// sched is what the network needs of a round: its clock and event queue.
type sched interface {
	nowMs() int64
	at(t int64, fn func())
}

// request carries a call to the registry: fn runs at its arrival, unless
// the request is lost; a copy may arrive later too.
func (f *setFaults) request(s sched, fn func()) {
	if f.net && f.g.chance(f.lostReq) {
		f.c.RequestsLost++
		return
	}
	d := f.delayMs()
	s.at(s.nowMs()+d, fn)
	if f.net && f.g.chance(f.dup) {
		f.c.Copies++
		extra := f.g.between(0, dupDelayMsMax)
		if f.late {
			extra = f.g.between(0, lateDelayMsMax)
		}
		s.at(s.nowMs()+d+extra, fn)
	}
}

// answer carries the registry's answer back: fn runs at its arrival,
// unless the answer is lost.
func (f *setFaults) answer(s sched, fn func()) {
	if f.net && f.g.chance(f.lostAns) {
		f.c.AnswersLost++
		return
	}
	s.at(s.nowMs()+f.delayMs(), fn)
}

// setCall is one call a worker makes, resent as it is until an answer
// comes back or it gives up.
type setCall struct{ over bool }

// call makes a worker's call: serve runs at the registry on each copy of
// the request that arrives and answers through reply; the first answer
// back ends the call with done(v, true). Without an answer after
// resendMs of the worker's clock (timer), the worker resends it, tries
// times in all, then ends it with done(zero, false). cancel (the
// returned call's over) ends it without an answer.
func setCallDo[T any](f *setFaults, s sched, timer func(localMs int64, fn func()), resendMs int64, tries int,
	serve func(reply func(T)), done func(T, bool)) *setCall {
	c := &setCall{}
	sent := 0
	var send func()
	send = func() {
		sent++
		if sent > 1 {
			f.c.Resent++
		}
		f.request(s, func() {
			serve(func(v T) {
				f.answer(s, func() {
					if !c.over {
						c.over = true
						done(v, true)
					}
				})
			})
		})
		timer(resendMs, func() {
			switch {
			case c.over:
			case sent < tries:
				send()
			default:
				c.over = true
				var zero T
				done(zero, false)
			}
		})
	}
	send()
	return c
}

// setLimits draws a round's registry settings: HandoffClaimMs over
// [handoffClaimMsMin, handoffClaimMsMax], LockDelayMs from the skew bound
// up, WaitPollMsMax and WaiterGraceMs over their ranges and the status
// proofs' life as the lock rounds draw it, each with its ends and default
// weighted.
func setLimits(g rng, off bool) registry.Config {
	c := registry.DefaultConfig(epochLive)
	c.StatusProofTTLMs = uint64(g.edgy(proofTTLMsMin, proofTTLMsMax, proofTTLMsMin, 2000, proofTTLMsMax))
	if off {
		return c
	}
	c.ClockSkewMaxMs = SkewBoundMsDefault
	c.HandoffClaimMs = uint64(g.edgy(handoffClaimMsMin, handoffClaimMsMax, handoffClaimMsMin, 2000, handoffClaimMsMax))
	c.LockDelayMs = uint64(g.edgy(SkewBoundMsDefault, lockDelayMsMax, SkewBoundMsDefault, 1000, lockDelayMsMax))
	c.WaitPollMsMax = uint64(g.edgy(waitPollMsMin, waitPollMsMax, waitPollMsMin, 1000, waitPollMsMax))
	c.WaiterGraceMs = uint64(g.edgy(waiterGraceMsMin, waiterGraceMsMax, waiterGraceMsMin, 1000, waiterGraceMsMax))
	if err := c.Validate(); err != nil {
		panic("sim: drew registry settings the registry refuses: " + err.Error())
	}
	return c
}

// The registry settings' ranges the set rounds draw from, in ms.
// HandoffClaimMs runs over the whole range the registry's Validate
// accepts (registry.HandoffClaimMsMin to HandoffClaimMsMax). The registry
// bounds neither WaitPollMsMax nor WaiterGraceMs (any value works; they
// trade polling for latency), and serve sets none of them: they run from
// about a tenth of their default (a half for WaitPollMsMax) to five or
// ten times it.
const (
	handoffClaimMsMin = registry.HandoffClaimMsMin
	handoffClaimMsMax = registry.HandoffClaimMsMax
	lockDelayMsMax    = 10_000
	waitPollMsMin     = 500
	waitPollMsMax     = 5000
	waiterGraceMsMin  = 100
	waiterGraceMsMax  = 10_000
)

// setGate is a set round's gate: an adapter over all its resources and
// the clock it decides by.
func (r *setRun) gate(f *setFaults, slot int, round int, seed uint64, now func() int64, clock partyClock) gateAdapter {
	return r.gateOf(r.gateKind(f), f, slot, round, seed, now, clock, SkewBoundMsDefault)
}

// gateKind draws a round's gate kind (one of gateNames), unless the run
// names one.
func (r *setRun) gateKind(f *setFaults) string {
	if r.o.Gate != "" {
		return r.o.Gate
	}
	n := setGateKindsBase
	if r.o.PG {
		n++
	}
	return gateNames[f.g.pick(n)]
}

// sharedGateKind reports whether a gate of kind lives across a run's
// rounds (one database per goroutine, its policy fixed at the run's
// skew bound, SkewBoundMsDefault) rather than being made per round.
func sharedGateKind(kind string) bool { return kind == "sql" || kind == "pg" }

// gateOf makes a round's gate of kind. A gate made per round (mem, obj)
// tolerates status statements skewed by skewBoundMs, the deployment's
// bound; a shared one (sharedGateKind) by SkewBoundMsDefault.
func (r *setRun) gateOf(kind string, f *setFaults, slot int, round int, seed uint64, now func() int64, clock partyClock, skewBoundMs int64) gateAdapter {
	f.c.GateRounds[indexOf(gateNames, kind)]++
	gclock := setGateClock{now: now, clock: clock}
	mode := r.cfg.mode()
	pol := r.keys.gatePolicy(r.o.Negative)
	pol.StatusSkewMax = time.Duration(skewBoundMs) * time.Millisecond
	switch kind {
	case "sql":
		e := r.envs[slot].sql
		e.nowFn = gclock.Now
		return sqlAdapter{e}
	case "pg":
		e := r.envs[slot].pg
		e.nowFn = gclock.Now
		return pgAdapter{env: e}
	case "obj":
		store := newObjStore(false, seed)
		gs := objGates(round, store, objgate.Config{Policy: pol, Clock: gclock, DefaultMode: mode})
		return &objAdapter{gates: gs, store: store, pick: rand.New(rand.NewPCG(seed, objPickStream))}
	}
	g, err := memgate.New(memgate.Config{Policy: pol, Clock: gclock, DefaultMode: mode})
	if err != nil {
		panic("sim: memgate: " + err.Error())
	}
	return memAdapter{g}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// setGateClock is a set round's gate clock: its party clock at the
// round's now.
type setGateClock struct {
	now   func() int64
	clock partyClock
}

func (c setGateClock) Now() time.Time { return c.clock.at(c.now()) }

// After fires at once: a gate never waits on its clock in a round.
func (c setGateClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

// setWrite sends one segment under is through g and reports whether
// the business change ran, and the gate's answer.
func setWrite(g gateAdapter, owner string, is wire.Issued, op string) (bool, error) {
	gr := is.Grant
	m := &gate.Mutation{
		Resource: gr.Resource, Lease: gr.Lease, OperationID: op, FenceToken: gr.FenceToken, SegmentSeq: 1,
		PayloadDigest: payloadDigest(op, 1, 0), Grant: gr.Encode(), GrantProof: is.GrantProof,
	}
	if st := is.Status; st != nil {
		m.Status, m.StatusProof = st.Encode(), is.StatusProof
	}
	ran := false
	_, err := g.apply(m, owner, func() { ran = true })
	return ran, err
}

func defaultParallel() int { return runtime.GOMAXPROCS(0) }

// errGaveUp answers a worker's acquire none of whose sends was answered.
var errGaveUp = errors.New("sim: every send of the acquire went unanswered; the worker gave up")
