package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

// This file is the lock-set rounds (issue 46): workers take lock sets of
// 2..k members drawn from a small pool of resources, each set named in a
// random order (opposite orders included; the product takes it sorted, as
// the SDK sends it), or a plain lock on one of the same resources, so sets
// and singles contend. They run the product's registry (two replicas over
// one memstore; each waiting acquire — registry.SetAcquisition for a set,
// registry.Acquisition for a plain lock — stepped on the round's event
// queue: woken when one of its members' records is committed, as a watch
// wakes it, and at its WakeAt, as its poll does) and a real gate
// (gate/memgate) per member resource, through which a holder writes each
// member it holds. TTLs are drawn over the registry's whole accepted range
// (log-uniformly, the ends weighted), waits over [2 s, WaitMsMax], each
// round's status-proof life as the lock rounds draw it; a share
// of holders freeze past their TTL and lock-delay before they write (the
// stale writer), a share of sets renew once (RenewSet) before they write,
// sets release with ReleaseSet, and a share of waits are given up
// (Abandon). Ground truth is what the registry committed (the store's
// commit hook), judged by the registry clock.
//
// The rounds run under the faults setfaults.go draws: the network between
// workers and the registry (lost requests and answers, each acquire,
// renewal and release resent as it is under the same request ID, copies,
// delays), skewed worker and gate clocks, the gate drawn among memgate,
// sqlgate and objgate (pggate with SetOptions.PG), and the registry's
// settings (HandoffClaimMs among them) drawn over their ranges. What the
// checker judges is the registry's side: each arrival of an acquire is a
// waiting acquire of its own, judged as above; a worker that gives up (an
// abandoned wait, or every send unanswered) cancels at the registry as a
// closed connection does, by a message that may be lost too, and a grant
// its answer never reached is held by nobody until its TTL.
//
// Which grants and tickets make one set is the request's: a set's member
// i is granted and queued under wire.MemberRequestID(id, i), and the
// world keeps, for each request ID a worker sends, the set (its intent) it
// belongs to — which is also how the MultiLock control's plain acquires
// are seen as one set.
//
// Checker properties, each 0 in a correct run:
//   - SetPartial: a set's members not granted in one commit (the grants of
//     one set request share the commit revision), or a set holding some
//     of its members live while not others;
//   - SetWaiterHolds: a set with a ticket in any member's queue while it
//     holds a live grant on any member;
//   - MemberTwice: a member granted while another lease on it was live;
//   - MemberStale: a write accepted at a member's gate with a fence below
//     one the registry had granted there before;
//   - Stuck (liveness): a wait that ran out while, for longer than the
//     claim bound (lsClaimBoundMs), every member it waited for had no live
//     holder, was past its lock-delay, and had no ticket ahead of its own
//     from an acquire still waiting;
//   - Deadlocks (liveness): a wait that ran out while it was part of a
//     cycle of waiters, each waiting for a member another one holds.
//
// Negative controls (sim/negative): the lease-only gate (fence) makes
// MemberStale non-zero; a store that commits a set write member by member
// (set-split) makes SetPartial non-zero; the MultiLock worker (multilock),
// which takes the members one by one with plain acquires in its naming
// order, makes SetWaiterHolds and Deadlocks non-zero; waiters that are
// never stepped at their WakeAt (no-poll) make Stuck non-zero; a store
// that reads behind (stale-read) makes MemberTwice non-zero.

// Lock-set round limits and rates, in simulated ms.
const (
	lsPoolMin       = 2
	lsWorkersMin    = 3
	lsWorkersMax    = 8
	lsOpsPerWorker  = 3
	lsPlainShare    = 0.3  // a worker's share of plain-lock operations
	lsFreezeShare   = 0.2  // a holder freezes past its TTL and lock-delay before writing
	lsCrashShare    = 0.1  // a holder dies holding: it never writes or releases, its lease ends by its TTL
	lsRenewShare    = 0.3  // a set holder renews once (RenewSet) before writing
	lsAbandonShare  = 0.15 // a wait is given up (Abandon) before it runs out
	lsHoldMsMax     = 1500 // below TTLMsMin: a holder that does not freeze releases in time
	lsWaitMsMin     = 2000
	lsFreezeMsExtra = 4000
	lsRoundMsMax    = 60 * 60 * 1000
	lsEventsMax     = 400_000
)

// LockSetCounts is what the lock-set rounds measured.
type LockSetCounts struct {
	Rounds, Sets, Plain, MemberGrants, Writes, Accepted, Frozen, Crashed, Renewed, Abandoned, RanOut int
	// ClearMsMax is the longest a wait was answered after every member
	// had been clear for it (the stuck count's margin to the claim bound).
	ClearMsMax int64
	// Refused counts acquires answered with an error other than a wait
	// that ran out (none in a correct run; a broken store causes some).
	Refused int
	// Ended counts answers, to a request resent after its answer was lost,
	// that its grant had ended meanwhile (the lease is the registry's
	// word: LEASE_EXPIRED, or released by the worker's cancel); GaveUp
	// acquires a worker gave up on, every send unanswered.
	Ended, GaveUp int
	// Steps counts the registry's acquire steps (the rounds' cost).
	Steps int
	Net   NetCounts
	// Safety: each must be 0.
	SetPartial, SetWaiterHolds, MemberTwice, MemberStale int
	// Liveness: each must be 0. Unended counts rounds cut off at
	// lsRoundMsMax or lsEventsMax, and waits without an answer when their
	// round ended.
	Stuck, Deadlocks, Unended int
	Violations                []Violation
	Digest                    uint64
}

// OK reports whether every safety and liveness count is 0.
func (c *LockSetCounts) OK() bool {
	return c.SetPartial == 0 && c.SetWaiterHolds == 0 && c.MemberTwice == 0 && c.MemberStale == 0 && c.Stuck == 0 && c.Deadlocks == 0 && c.Unended == 0
}

// Bad is the sum of the counts OK requires to be 0.
func (c *LockSetCounts) Bad() int {
	return c.SetPartial + c.SetWaiterHolds + c.MemberTwice + c.MemberStale + c.Stuck + c.Deadlocks + c.Unended
}

// RunLockSets runs rounds lock-set rounds of seed, with the negative
// control neg (Shadow: the lease-only gate; Store: the registry's store
// replaced; MultiLock: the member-by-member worker; NoPoll: waiters never
// stepped at their WakeAt) if any, on parallel goroutines (0: one per
// core). Rounds are independent worlds seeded from (seed, round) and
// merged in round order, so parallel changes only the speed, never a
// count or the digest.
func RunLockSets(seed uint64, rounds, parallel int, neg *Negative) (*LockSetCounts, error) {
	return RunLockSetsWith(SetOptions{Seed: seed, Rounds: rounds, Parallel: parallel, Negative: neg})
}

// RunLockSetsWith runs the lock-set rounds o names.
func RunLockSetsWith(o SetOptions) (*LockSetCounts, error) {
	run, err := newSetRun(o)
	if err != nil {
		return nil, err
	}
	defer run.close()
	results := inParallelSlots(o.Rounds, run.o.Parallel, func(slot, r int) *LockSetCounts {
		c := &LockSetCounts{}
		w := newLSWorld(run, slot, r+1, c)
		w.run()
		c.Digest = w.digest.Sum64()
		return c
	})
	total := &LockSetCounts{}
	for _, c := range results {
		total.Rounds++
		for _, f := range []struct{ to, from *int }{
			{&total.Sets, &c.Sets}, {&total.Plain, &c.Plain}, {&total.MemberGrants, &c.MemberGrants},
			{&total.Writes, &c.Writes}, {&total.Accepted, &c.Accepted}, {&total.Frozen, &c.Frozen}, {&total.Crashed, &c.Crashed},
			{&total.Renewed, &c.Renewed}, {&total.Abandoned, &c.Abandoned}, {&total.RanOut, &c.RanOut},
			{&total.Refused, &c.Refused}, {&total.Ended, &c.Ended}, {&total.Steps, &c.Steps}, {&total.GaveUp, &c.GaveUp}, {&total.SetPartial, &c.SetPartial}, {&total.SetWaiterHolds, &c.SetWaiterHolds},
			{&total.MemberTwice, &c.MemberTwice}, {&total.MemberStale, &c.MemberStale},
			{&total.Stuck, &c.Stuck}, {&total.Deadlocks, &c.Deadlocks}, {&total.Unended, &c.Unended},
		} {
			*f.to += *f.from
		}
		for _, v := range c.Violations {
			if len(total.Violations) < ViolationsMax {
				total.Violations = append(total.Violations, v)
			}
		}
		total.ClearMsMax = max(total.ClearMsMax, c.ClearMsMax)
		total.Net.add(&c.Net)
		total.Digest = mixDigest(total.Digest, c.Digest)
	}
	return total, nil
}

// lsKey names one request as the registry stores it: its owner and
// (member) request ID.
type lsKey struct{ owner, id string }

// lsIntent is one acquire a worker made — a set (its members' requests),
// a MultiLock's plain acquires of its members, or one plain lock — and
// what the committed records showed of it.
type lsIntent struct {
	name    string // owner/request ID
	want    int    // members
	rev     uint64 // the commit revision of its first member grant; 0 before
	granted int    // members granted at rev
	// counted: violations already counted for it, by kind, so a
	// condition that lasts counts once.
	counted map[string]bool
	// running: its acquires at the registry still waiting (one per
	// arrival of its request, resends and copies included).
	running []*lsPending
}

// memberTruth is what the registry committed about one pool resource.
type memberTruth struct {
	expires  map[string]int64     // lease → committed expiry, for leases granted and not seen ended
	intent   map[string]*lsIntent // lease → the acquire it was granted to (nil: unknown)
	fenceMax uint64               // highest fence granted
	waiters  []lockstate.Waiter   // the queue as last committed
	freeAtMs int64                // FreeAtMs as last committed
	busyMs   int64                // the last instant a lease no longer in expires kept it busy
}

// clearAtMs is the registry instant from which t has had no live holder
// and been past every lock-delay, as far as the leases it knows say (in
// the future while a lease is live).
func (w *lsWorld) clearAtMs(t *memberTruth) int64 {
	at := max(t.freeAtMs, t.busyMs)
	for _, exp := range t.expires {
		at = max(at, exp+int64(w.lim.LockDelayMs))
	}
	return at
}

type lsWorld struct {
	roundWorld
	store   *memstore.Store
	regs    []*registry.Registry
	gate    gateAdapter
	f       *setFaults
	pool    []string
	lim     registry.Config
	pending []*lsPending
	truth   map[string]*memberTruth
	intents map[lsKey]*lsIntent
	claimMs int64
	c       *LockSetCounts
}

// lsPending is one waiting acquire (a set's or a plain one), stepped on
// the event queue.
type lsPending struct {
	intent     *lsIntent
	members    []string // what it waits for, sorted
	keys       []lsKey  // its ticket in each member's queue, in members' order
	step       func() bool
	wakeAt     func() time.Time
	abandon    func()
	reply      func(error)
	deadline   int64 // the end of its wait, by the round's clock
	done       bool
	tok        int
	clearSince int64 // since when no waiting ticket was ahead of it on any member (-1: one is)
}

type lsClock struct{ w *lsWorld }

func (c lsClock) Now() time.Time { return epochBase.Add(time.Duration(c.w.now) * time.Millisecond) }

// After fires at once: every registry call runs to its end in one event.
func (c lsClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

func newLSWorld(run *setRun, slot, round int, c *LockSetCounts) *lsWorld {
	seed, neg, keys := run.o.Seed, run.o.Negative, run.keys
	s := roundSeed(seed^0x6c6f636b73657473, round) // "locksets": apart from the other rounds' seeds
	w := &lsWorld{roundWorld: newRoundWorld(seed, s, round, neg, "--lockset-rounds", &c.Violations), c: c,
		truth: map[string]*memberTruth{}, intents: map[lsKey]*lsIntent{}}
	w.f = newSetFaults(s, lsRoundMsMax, run.o.NoFaults, &c.Net)
	w.lim = setLimits(w.f.g, run.o.NoFaults)
	// The claim bound: a free member's vanished head is dropped within
	// 2 × HandoffClaimMs of its last stamp and a waiter looks at least
	// every WaitPollMsMax; one more HandoffClaimMs for a second ghost.
	w.claimMs = int64(3*w.lim.HandoffClaimMs + 2*w.lim.WaitPollMsMax)
	poolN := int(w.rng.edgy(lsPoolMin, wire.LockSetMembersMax, lsPoolMin, 3, wire.LockSetMembersMax))
	for i := range poolN {
		w.pool = append(w.pool, fmt.Sprintf("ls/round-%d/r%02d", round, i))
	}
	w.store = memstore.New()
	w.store.OnCommit(w.committed)
	for range 2 {
		var st registry.Store = w.store
		if neg != nil && neg.Store != nil {
			st = neg.Store(st)
		}
		reg, err := registry.New(st, w.lim, lsClock{w}, keys.registry, registry.WithRand(rand.NewPCG(w.rng.r.Uint64(), 1)))
		if err != nil {
			panic("sim: registry: " + err.Error())
		}
		w.regs = append(w.regs, reg)
	}
	w.gate = run.gate(w.f, slot, round, s, w.nowMs, w.f.clock())
	for _, r := range w.pool {
		w.truth[r] = &memberTruth{expires: map[string]int64{}, intent: map[string]*lsIntent{}}
	}
	for i := range int(w.rng.between(lsWorkersMin, lsWorkersMax)) {
		k := &lsWorker{w: w, id: i, name: fmt.Sprintf("worker-%d", i), reg: w.regs[i%2], ops: lsOpsPerWorker, clock: w.f.clock(),
			callMs: w.f.g.edgy(callTimeoutMsMin, callTimeoutMsMax, callTimeoutMsMin, callTimeoutMsMax)}
		w.at(w.rng.between(0, 1000), k.next)
	}
	return w
}

func (w *lsWorld) run() {
	for events := 0; w.q.Len() > 0; events++ {
		e := w.q.pop()
		if e.atMs > lsRoundMsMax || events > lsEventsMax {
			w.c.Unended++
			w.violate("round-livelock", "round did not end by %d ms / %d events", lsRoundMsMax, lsEventsMax)
			return
		}
		w.now = e.atMs
		w.mix(uint64(e.atMs), e.seq)
		e.fn()
		w.judgeWaits()
	}
	for _, p := range w.pending {
		w.c.Unended++
		w.violate("wait-unanswered", "%s's wait for %v had no answer when the round ended", p.intent.name, p.members)
	}
}

// committed is the store's commit hook: the registry's ground truth for
// the pool's records, judged at once (SetPartial, SetWaiterHolds,
// MemberTwice), and a wake for every waiting acquire one of whose members
// the commit wrote (after the commit, never inside it), as its watch.
func (w *lsWorld) committed(c *memstore.Committed) {
	var written []string
	if c.RecordWritten && c.Resource != "" {
		written = append(written, c.Resource)
	}
	written = append(written, c.Members...)
	for _, p := range w.pending {
		for _, m := range written {
			if slices.Contains(p.members, m) {
				w.at(w.now, func() { w.step(p) })
				break
			}
		}
	}
	var grantedNow []*lsIntent
	for _, name := range written {
		t := w.truth[name]
		if t == nil {
			continue // a resource outside the pool
		}
		rec, err := c.RecordOf(name)
		if err != nil || rec == nil {
			panic("sim: the store holds a record it cannot decode")
		}
		for _, e := range rec.Ended {
			if exp, ok := t.expires[e.Lease]; ok {
				// busy until its release, or its expiry and lock-delay
				t.busyMs = max(t.busyMs, min(w.regNowMs(), exp+int64(w.lim.LockDelayMs)))
			}
			delete(t.expires, e.Lease)
			delete(t.intent, e.Lease)
		}
		t.waiters, t.freeAtMs = rec.Waiters, rec.FreeAtMs
		h := rec.Holder
		if h == nil {
			continue
		}
		if _, known := t.expires[h.Grant.Lease]; !known {
			for _, other := range w.liveOn(t) {
				if other != h.Grant.Lease {
					w.c.MemberTwice++
					w.violate("member-held-twice", "%s granted to %s (fence %d) while lease %s was live", name, h.Grant.Lease, h.Grant.FenceToken, other)
				}
			}
			t.fenceMax = max(t.fenceMax, h.Grant.FenceToken)
			in := w.intents[lsKey{h.Grant.Owner, h.Grant.RequestID}]
			t.intent[h.Grant.Lease] = in
			if in != nil {
				if in.rev == 0 {
					in.rev = c.Revision
				}
				if in.rev == c.Revision {
					in.granted++
					if !slices.Contains(grantedNow, in) {
						grantedNow = append(grantedNow, in)
					}
				} else {
					w.once(&in.counted, "set-partial", &w.c.SetPartial, "%s: member %s granted at revision %d, its first member at %d", in.name, name, c.Revision, in.rev)
				}
			}
		}
		t.expires[h.Grant.Lease] = h.ExpiresAtMs
	}
	for _, in := range grantedNow {
		if in.granted != in.want {
			w.once(&in.counted, "set-partial", &w.c.SetPartial, "%s: %d of %d members granted in the commit at revision %d", in.name, in.granted, in.want, c.Revision)
		}
	}
	w.judgeHolds()
}

// judgeHolds checks, by the committed records and the registry clock now,
// that no set holds some members live and not others, and none holds a
// live member while it has a ticket in any member's queue.
func (w *lsWorld) judgeHolds() {
	live := map[*lsIntent]int{}
	for _, r := range w.pool {
		t := w.truth[r]
		for _, l := range w.liveOn(t) {
			if in := t.intent[l]; in != nil {
				live[in]++
			}
		}
	}
	for _, r := range w.pool {
		for _, wt := range w.truth[r].waiters {
			in := w.intents[lsKey{wt.Owner, wt.RequestID}]
			if in != nil && in.want > 1 && live[in] > 0 {
				w.once(&in.counted, "set-waiter-holds", &w.c.SetWaiterHolds, "%s has a ticket in %s's queue while it holds %d live member(s)", in.name, r, live[in])
			}
		}
	}
	for _, r := range w.pool {
		t := w.truth[r]
		for _, l := range w.liveOn(t) {
			if in := t.intent[l]; in != nil && live[in] < in.want {
				w.once(&in.counted, "set-partial", &w.c.SetPartial, "%s holds %d of its %d members live (%s among them)", in.name, live[in], in.want, r)
			}
		}
	}
}

// liveOn lists t's leases live by the registry clock now, in lease order.
func (w *lsWorld) liveOn(t *memberTruth) []string {
	var out []string
	for l, exp := range t.expires {
		if exp > w.regNowMs() {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// noneAhead reports whether member i's queue has no ticket ahead of p's
// own (anywhere in it when p has none there) from an acquire still
// waiting. It changes only at events (a commit, a wait's end).
func (w *lsWorld) noneAhead(p *lsPending, i int) bool {
	t := w.truth[p.members[i]]
	for _, wt := range t.waiters {
		k := lsKey{wt.Owner, wt.RequestID}
		if k == p.keys[i] {
			return true
		}
		if in := w.intents[k]; in != nil && in != p.intent && len(in.running) > 0 {
			return false
		}
	}
	return true
}

// judgeWaits keeps, after every event, since when each waiting acquire
// has had no waiting ticket ahead of its own on any member (noneAhead):
// exact, since that changes only at events.
func (w *lsWorld) judgeWaits() {
	for _, p := range w.pending {
		clear := true
		for i := range p.members {
			if !w.noneAhead(p, i) {
				clear = false
				break
			}
		}
		switch {
		case !clear:
			p.clearSince = -1
		case p.clearSince < 0:
			p.clearSince = w.now
		}
	}
}

// clearMs is how long every member of p has been clear for it — no live
// holder, past its lock-delay, no waiting ticket ahead of its own — by
// the registry clock now; -1 when one is not.
func (w *lsWorld) clearMs(p *lsPending) int64 {
	w.judgeWaits()
	if p.clearSince < 0 {
		return -1
	}
	since := epochBase.UnixMilli() + p.clearSince
	for _, m := range p.members {
		since = max(since, w.clearAtMs(w.truth[m]))
	}
	return max(w.regNowMs()-since, -1)
}

// ranOut judges a wait that ran out: deadlocked when it was in a cycle
// of waiters each holding a member another waits for.
func (w *lsWorld) ranOut(p *lsPending) {
	w.c.RanOut++
	if cycle := w.cycleFrom(p, p.intent, map[*lsIntent]bool{}); cycle != nil {
		w.c.Deadlocks++
		w.violate("deadlock", "%s's wait for %v ran out in a cycle of waiters: %v", p.intent.name, p.members, cycle)
	}
}

// cycleFrom follows from waiting acquire p the holders of the members it
// waits for, and the members those holders wait for, back to target; it
// returns the cycle's intents' names, or nil.
func (w *lsWorld) cycleFrom(p *lsPending, target *lsIntent, seen map[*lsIntent]bool) []string {
	for _, m := range p.members {
		t := w.truth[m]
		for _, l := range w.liveOn(t) {
			in := t.intent[l]
			if in == nil || seen[in] {
				continue
			}
			if in == target {
				return []string{fmt.Sprintf("%s (holds %s)", in.name, m)}
			}
			seen[in] = true
			for _, q := range in.running {
				if rest := w.cycleFrom(q, target, seen); rest != nil {
					return append([]string{fmt.Sprintf("%s (holds %s)", in.name, m)}, rest...)
				}
			}
		}
	}
	return nil
}

// wait steps p now and then on its members' commits and at its WakeAt
// (never at WakeAt under the no-poll control), until it has its answer.
func (w *lsWorld) wait(p *lsPending) {
	p.clearSince = -1
	w.pending = append(w.pending, p)
	p.intent.running = append(p.intent.running, p)
	w.step(p)
}

func (w *lsWorld) step(p *lsPending) {
	if p.done {
		return
	}
	clear := w.clearMs(p) // as it stood when the step began
	w.c.Steps++
	if p.step() {
		w.end(p)
		w.c.ClearMsMax = max(w.c.ClearMsMax, clear)
		if clear > w.claimMs {
			// Answered (granted or run out) only now, though every
			// member had been clear for it longer than the claim bound.
			w.c.Stuck++
			w.violate("set-stuck", "%s's wait for %v answered with every member clear for it for %d ms (claim bound %d ms)", p.intent.name, p.members, clear, w.claimMs)
		}
		p.reply(nil)
		return
	}
	p.tok++
	wake := p.wakeAt().UnixMilli() - epochBase.UnixMilli()
	if w.neg != nil && w.neg.NoPoll {
		// Only the caller's own deadline (its context's) ends the wait.
		wake = p.deadline
	}
	tok := p.tok
	w.at(max(wake, w.now+1), func() {
		if tok == p.tok {
			w.step(p)
		}
	})
}

func (w *lsWorld) end(p *lsPending) {
	p.done = true
	if i := slices.Index(w.pending, p); i >= 0 {
		w.pending = slices.Delete(w.pending, i, i+1)
	}
	p.intent.running = slices.DeleteFunc(p.intent.running, func(q *lsPending) bool { return q == p })
}

// giveUp abandons every acquire of in still waiting at the registry, as
// its caller's closed connection does: their tickets are withdrawn.
func (w *lsWorld) giveUp(in *lsIntent) {
	for _, p := range slices.Clone(in.running) {
		if p.done {
			continue
		}
		p.abandon()
		w.end(p)
		w.c.Abandoned++
		w.mix(0xab)
		p.reply(errAbandoned)
	}
}

var errAbandoned = errors.New("sim: the worker gave up its wait")

// intent registers an acquire: keys are its requests (one per member).
func (w *lsWorld) intent(owner, id string, keys []lsKey) *lsIntent {
	in := &lsIntent{name: owner + "/" + id, want: len(keys)}
	for _, k := range keys {
		w.intents[k] = in
	}
	return in
}

// answered accounts an acquire's answer: the digest, and a wait that ran
// out or an error. It reports whether the acquire was granted.
func (w *lsWorld) answered(p *lsPending, err error, fences ...uint64) bool {
	w.mix(uint64(len(wire.CodeOf(err))))
	w.mix(fences...)
	switch {
	case err == nil:
		return true
	case errors.Is(err, errAbandoned):
	case errors.Is(err, wire.ErrWaitTimeout):
		w.ranOut(p)
	case errors.Is(err, wire.ErrLeaseExpired) || errors.Is(err, wire.ErrNotHolder):
		w.c.Ended++
	default:
		w.c.Refused++
	}
	return false
}

// write sends one segment under is at its resource's gate and checks the
// decision against the registry's truth.
func (w *lsWorld) write(owner string, is wire.Issued, op string) {
	g := is.Grant
	w.c.Writes++
	ran, err := setWrite(w.gate, owner, is, op)
	w.mix(uint64(len(gate.OutcomeOf(err))), g.FenceToken)
	if !ran {
		return
	}
	w.c.Accepted++
	if t := w.truth[g.Resource]; t != nil && g.FenceToken < t.fenceMax {
		w.c.MemberStale++
		w.violate("member-stale-accepted", "%s: %s's write at fence %d accepted after fence %d was granted (%v)", g.Resource, owner, g.FenceToken, t.fenceMax, err)
	}
}

// lsWorker takes a lock set (or a plain lock on one pool resource),
// holds it for a moment — renewing a set once, or freezing past its TTL
// and lock-delay — writes one segment through each member's gate, and
// releases; or dies holding it (and starts again, as a new life of the
// worker); lsOpsPerWorker times.
type lsWorker struct {
	w      *lsWorld
	id     int
	name   string
	reg    *registry.Registry
	ops    int
	reqN   int
	clock  partyClock // the worker's own
	callMs int64      // its call timeout, on its clock
}

// timer runs fn after localMs of the worker's clock.
func (k *lsWorker) timer(localMs int64, fn func()) {
	k.w.at(k.w.now+k.clock.durationMs(localMs), fn)
}

// call sends a renewal or release (serve, at the registry) until it is
// answered, setCallTriesMax times at most; done has the answer, or
// ok false.
func (k *lsWorker) call(serve func() (wire.IssuedSet, error), done func(is wire.IssuedSet, err error, ok bool)) {
	type answer struct {
		is  wire.IssuedSet
		err error
	}
	setCallDo(k.w.f, k.w, k.timer, k.callMs, setCallTriesMax, func(back func(answer)) {
		is, err := serve()
		back(answer{is, err})
	}, func(a answer, ok bool) { done(a.is, a.err, ok) })
}

// lsOp is one operation's draw.
type lsOp struct {
	id, op  string
	ttl     uint64
	waitMs  uint64
	freeze  bool
	crash   bool
	holdMs  int64
	renew   bool
	abandon int64 // when > 0: give the wait up this long after it starts
}

func (k *lsWorker) next() {
	if k.ops == 0 {
		return
	}
	k.ops--
	k.reqN++
	w := k.w
	o := lsOp{id: fmt.Sprintf("req-%d-%d", k.id, k.reqN), op: fmt.Sprintf("op-%d-%d", k.id, k.reqN)}
	o.ttl = uint64(w.rng.edgy(int64(w.lim.TTLMsMin), int64(w.lim.TTLMsMax), int64(w.lim.TTLMsMin), int64(w.lim.TTLMsMax)))
	o.waitMs = uint64(w.rng.edgy(lsWaitMsMin, int64(w.lim.WaitMsMax), lsWaitMsMin, int64(w.lim.WaitMsMax)))
	o.freeze = w.rng.chance(lsFreezeShare)
	o.holdMs = w.rng.between(computeMsMin, lsHoldMsMax)
	if o.freeze {
		o.holdMs = int64(o.ttl+w.lim.LockDelayMs) + w.rng.between(0, lsFreezeMsExtra)
	}
	o.crash = !o.freeze && w.rng.chance(lsCrashShare)
	o.renew = !o.freeze && !o.crash && w.rng.chance(lsRenewShare)
	if w.rng.chance(lsAbandonShare) {
		o.abandon = w.rng.between(1, int64(o.waitMs)-1)
	}
	if w.rng.chance(lsPlainShare) {
		k.plain(w.pool[w.rng.pick(len(w.pool))], o)
		return
	}
	n := int(w.rng.edgy(2, int64(len(w.pool)), 2, int64(len(w.pool))))
	named := slices.Clone(w.pool)
	w.rng.r.Shuffle(len(named), func(i, j int) { named[i], named[j] = named[j], named[i] })
	named = named[:n] // n distinct members, in a random naming order
	for _, m := range named {
		w.mix(uint64(len(m)), uint64(m[len(m)-1]))
	}
	if w.neg != nil && w.neg.MultiLock {
		k.multiLock(named, o)
		return
	}
	k.set(named, o)
}

// again starts the worker's next operation after a short pause.
func (k *lsWorker) again() { k.timer(k.w.rng.between(0, 500), k.next) }

// hold runs a holder's life from its grant: it holds (or freezes),
// renews when o says (renew, which may replace the grants, then goes
// on), writes every member through its gate and releases (release).
func (k *lsWorker) hold(o lsOp, held []wire.Issued, renew func([]wire.Issued, func([]wire.Issued)), release func([]wire.Issued)) {
	w := k.w
	if o.crash {
		// Dead holding: nothing is written when its lease ends, so only
		// a waiter that looks at its WakeAt (the poll) sees the end.
		w.c.Crashed++
		k.again() // the worker's next life
		return
	}
	if o.freeze {
		// Frozen past its lease and the lock-delay, then it writes as if
		// nothing happened: each member's gate must refuse it once the
		// member has a newer fence.
		w.c.Frozen++
	}
	finish := func() {
		for _, is := range held {
			w.write(k.name, is, o.op)
		}
		release(held)
		k.again()
	}
	if !o.renew || renew == nil {
		k.timer(o.holdMs, finish)
		return
	}
	k.timer(o.holdMs/2, func() {
		renew(held, func(got []wire.Issued) {
			held = got
			k.timer(o.holdMs-o.holdMs/2, finish)
		})
	})
}

// lsSend sends an acquire of in (serve runs at the registry on each
// arrival) until an answer comes back: resent as it is after its wait and
// the worker's call timeout, setTriesMax times at most, then given up;
// given up too after o.abandon when o says. A worker that gives up
// cancels every acquire of in at the registry, by a message that may be
// lost, and done has ok false.
func lsSend[T any](k *lsWorker, in *lsIntent, o lsOp, serve func(back func(T)), done func(v T, ok bool)) {
	w := k.w
	c := setCallDo(w.f, w, k.timer, int64(o.waitMs)+k.callMs, setTriesMax, serve, func(v T, ok bool) {
		if !ok {
			w.c.GaveUp++
			w.f.request(w, func() { w.giveUp(in) })
		}
		done(v, ok)
	})
	if o.abandon > 0 {
		k.timer(o.abandon, func() {
			if c.over {
				return
			}
			c.over = true
			w.f.request(w, func() { w.giveUp(in) })
			var zero T
			done(zero, false)
		})
	}
}

// serveWait starts p, an acquire that arrived at the registry now with
// a wait of waitMs.
func (w *lsWorld) serveWait(p *lsPending, waitMs uint64) {
	p.deadline = w.now + int64(waitMs)
	w.wait(p)
}

// set takes the lock set named (sorted, as the SDK sends it).
func (k *lsWorker) set(named []string, o lsOp) {
	w := k.w
	members := slices.Sorted(slices.Values(named))
	keys := make([]lsKey, len(members))
	for i := range members {
		keys[i] = lsKey{k.name, wire.MemberRequestID(o.id, i)}
	}
	req := wire.LockSetRequest{Members: members, OperationID: o.op, OperationClass: "settle", RequestID: o.id, TTLMs: o.ttl, WaitMs: o.waitMs}
	in := w.intent(k.name, o.id, keys)
	type answer struct {
		is  wire.IssuedSet
		err error
	}
	serve := func(back func(answer)) {
		a, err := k.reg.StartAcquireSet(k.name, req)
		if err != nil {
			w.c.Refused++
			w.violate("set-refused", "%s: %v", o.id, err)
			back(answer{err: err})
			return
		}
		p := &lsPending{intent: in, members: members, keys: keys,
			step:    func() bool { return a.Step(context.Background()) },
			wakeAt:  a.WakeAt,
			abandon: func() { a.Abandon(context.Background()) },
		}
		p.reply = func(err error) {
			is, rerr := a.Result()
			if err == nil {
				err = rerr
			}
			var fences []uint64
			for _, m := range is.Members {
				fences = append(fences, m.Grant.FenceToken)
			}
			w.answered(p, err, fences...)
			back(answer{is, err})
		}
		w.serveWait(p, req.WaitMs)
	}
	lsSend(k, in, o, serve, func(a answer, ok bool) {
		if !ok || a.err != nil {
			k.again()
			return
		}
		is := a.is
		if len(is.Members) != len(members) {
			panic(fmt.Sprintf("sim: set %v answered with %d grants", members, len(is.Members)))
		}
		w.c.Sets++
		w.c.MemberGrants += len(is.Members)
		leases := make([]wire.LeaseRequest, len(is.Members))
		for i, m := range is.Members {
			leases[i] = wire.LeaseRequest{Resource: m.Grant.Resource, Lease: m.Grant.Lease}
		}
		renew := func(held []wire.Issued, then func([]wire.Issued)) {
			k.call(func() (wire.IssuedSet, error) {
				return k.reg.RenewSet(context.Background(), k.name, leases)
			}, func(got wire.IssuedSet, err error, ok bool) {
				w.mix(uint64(len(wire.CodeOf(err))))
				if !ok || err != nil || len(got.Members) != len(held) {
					then(held)
					return
				}
				w.c.Renewed++
				then(got.Members)
			})
		}
		k.hold(o, is.Members, renew, func([]wire.Issued) {
			k.call(func() (wire.IssuedSet, error) {
				return wire.IssuedSet{}, k.reg.ReleaseSet(context.Background(), k.name, leases)
			}, func(_ wire.IssuedSet, err error, _ bool) { w.mix(uint64(len(wire.CodeOf(err)))) })
		})
	})
}

// acquire starts one plain acquire of resource under request ID id for
// intent in, and calls reply with its answer (an error when the worker
// gave up).
func (k *lsWorker) acquire(resource, id string, in *lsIntent, o lsOp, reply func(wire.Issued, error)) {
	w := k.w
	req := wire.AcquireRequest{Resource: resource, OperationClass: "settle", RequestID: id, OperationID: o.op, TTLMs: o.ttl, WaitMs: o.waitMs}
	type answer struct {
		is  wire.Issued
		err error
	}
	serve := func(back func(answer)) {
		a, err := k.reg.StartAcquire(k.name, req)
		if err != nil {
			w.c.Refused++
			w.violate("acquire-refused", "%s: %v", id, err)
			back(answer{err: err})
			return
		}
		p := &lsPending{intent: in, members: []string{resource}, keys: []lsKey{{k.name, id}},
			step:    func() bool { return a.Step(context.Background(), false) },
			wakeAt:  a.WakeAt,
			abandon: func() { a.Abandon(context.Background()) },
		}
		p.reply = func(err error) {
			is, rerr := a.Result()
			if err == nil {
				err = rerr
			}
			var fence uint64
			if is.Grant != nil {
				fence = is.Grant.FenceToken
			}
			w.answered(p, err, fence)
			back(answer{is, err})
		}
		w.serveWait(p, req.WaitMs)
	}
	lsSend(k, in, o, serve, func(a answer, ok bool) {
		if !ok {
			a.err = errGaveUp
		}
		reply(a.is, a.err)
	})
}

// plain takes a plain lock on resource, beside the sets.
func (k *lsWorker) plain(resource string, o lsOp) {
	w := k.w
	in := w.intent(k.name, o.id, []lsKey{{k.name, o.id}})
	k.acquire(resource, o.id, in, o, func(is wire.Issued, err error) {
		if err != nil {
			k.again()
			return
		}
		w.c.Plain++
		k.hold(o, []wire.Issued{is}, nil, func(held []wire.Issued) { k.release(held) })
	})
}

// release sends the plain releases of held, each until it is answered
// (setCallTriesMax times at most; then the lease ends by its TTL).
func (k *lsWorker) release(held []wire.Issued) {
	for _, is := range held {
		k.call(func() (wire.IssuedSet, error) {
			return wire.IssuedSet{}, k.reg.Release(context.Background(), k.name, is.Grant.Resource, is.Grant.Lease)
		}, func(_ wire.IssuedSet, err error, _ bool) { k.w.mix(uint64(len(wire.CodeOf(err)))) })
	}
}

// multiLock is the negative control's worker (Negative.MultiLock): the
// peers' recipe, each member a plain acquire in the caller's naming
// order, holding those it has while it waits for the next, and giving
// them back one by one if a wait fails.
func (k *lsWorker) multiLock(named []string, o lsOp) {
	w := k.w
	keys := make([]lsKey, len(named))
	for i := range named {
		keys[i] = lsKey{k.name, fmt.Sprintf("%s.m%d", o.id, i)}
	}
	in := w.intent(k.name, o.id, keys)
	var took []wire.Issued
	var take func(i int)
	take = func(i int) {
		if i == len(named) {
			w.c.Sets++
			w.c.MemberGrants += len(took)
			k.hold(o, took, nil, k.release)
			return
		}
		k.acquire(named[i], keys[i].id, in, o, func(is wire.Issued, err error) {
			if err != nil {
				k.release(took)
				k.again()
				return
			}
			took = append(took, is)
			take(i + 1)
		})
	}
	take(0)
}
