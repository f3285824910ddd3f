package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// checker keeps the ground truth of one round and classifies every gate
// decision against it. Ground truth about leases comes only from what the
// registry committed to its store (every committed record passes through
// the store's commit hook) judged by the registry's own clock; ground
// truth about the resource comes from the decisions the gate took.
type checker struct {
	w *world
	c *Counts

	grants    map[string]*grantTruth // lease → truth
	current   string                 // lease of the latest grant committed
	issuedMax uint64                 // highest fence the registry ever issued this round
	// historyMax is the highest fence issued in the store's current
	// history: raised by each grant, and set by a restore to the restored
	// record's (the history the store went back to). A grant at or below
	// it was issued twice within one history of the store, which no
	// restore explains (FenceReusedByRegistry; the chaos suite's count of
	// the same name judges a history the same way).
	historyMax uint64

	acceptedMax map[*resource]uint64
	acceptedBy  map[*resource][]fenceLease // first lease accepted under each fence, in order
	lastSeq     map[string]uint64          // lease → last accepted segment
	skewSeen    bool                       // a gate saw a status issued beyond its skew bound in its future
	regressedAt bool                       // a regressed grant reached the gate
	regressions int                        // grants the registry issued at or below a fence it had issued before
	alarms      int                        // FENCE_REGRESSION and REGRESSION_SUSPECTED decisions this round
	slipped     int                        // accepts that only the clock bound would have stopped
	ghosts      map[lockstate.RequestKey]bool
	requests    map[lockstate.RequestKey]bool // every request granted this round, across restores
	jobsDone    map[[2]uint64]bool            // (fence, job) applied at the job target
	jobFenceMax uint64                        // highest fence of a job applied there
	record      *lockstate.Record             // the main resource's record as last committed or restored
	// afterRestore: the store was restored this round (handoffs from
	// then on are not budgeted: held).
	afterRestore bool
}

type fenceLease struct {
	fence uint64
	lease string
}

// grantTruth is what the registry committed about one grant.
type grantTruth struct {
	fence       uint64
	owner       string
	lastExpMs   int64 // latest committed expiry (registry clock, Unix ms)
	endedMs     int64 // registry instant it ended by a commit (0: not ended)
	regressed   bool  // issued with a fence the registry had issued before, or revived
	revived     bool  // said HELD after a higher fence superseded it or a commit ended it
	endForgot   bool  // expired by a registry that had forgotten a renewal: live until lastExpMs
	prev        string
	handoffFrom int64 // true ms from which handoff is measured (0: none)
	firstWrite  bool
	heldLong    bool // its holder waited on purpose before writing (FaultLongHold): no first-write figure
	firstAnswer bool // its first segment-1 write was decided
	// reissued: issued after the store was restored this round, to a
	// request granted before under another lease (the restore forgot
	// it); received: its answer reached a worker (blockedByRestore).
	reissued, received bool
}

func newChecker(w *world, c *Counts) *checker {
	return &checker{
		w: w, c: c,
		grants:      make(map[string]*grantTruth, 4),
		acceptedMax: make(map[*resource]uint64, 2),
		acceptedBy:  make(map[*resource][]fenceLease, 2),
		lastSeq:     make(map[string]uint64, 4),
		ghosts:      make(map[lockstate.RequestKey]bool, 2),
		requests:    make(map[lockstate.RequestKey]bool, 4),
		jobsDone:    make(map[[2]uint64]bool, 4),
	}
}

// committed reads a record the registry committed for the main resource
// (the store's commit hook). It also counts ghost waiters: tickets in the
// queue of requests that already have an answer (an entry in the request
// index, as answered tells), which must never exist.
func (k *checker) committed(rec *lockstate.Record, answered func(lockstate.RequestKey) bool) {
	k.extended(rec)
	if h := rec.Holder; h != nil {
		g := k.grants[h.Grant.Lease]
		if g == nil {
			req := lockstate.RequestKey{Owner: h.Grant.Owner, RequestID: h.Grant.RequestID}
			_, again := k.requests[req]
			g = &grantTruth{fence: h.Grant.FenceToken, owner: h.Grant.Owner, regressed: h.Grant.FenceToken <= k.issuedMax, prev: k.current,
				reissued: again && k.afterRestore}
			k.requests[req] = true
			k.grants[h.Grant.Lease] = g
			if g.regressed {
				k.c.RegressedGrants++
				k.regressions++
			}
			if g.fence <= k.historyMax {
				k.c.FenceReusedByRegistry++
				k.violate("fence-reused", "lease %s granted fence %d, at or below fence %d issued in the same history of the store (no restore between)",
					h.Grant.Lease, g.fence, k.historyMax)
			}
			k.issuedMax, k.historyMax = max(k.issuedMax, g.fence), max(k.historyMax, g.fence)
			k.current = h.Grant.Lease
		}
		g.lastExpMs = max(g.lastExpMs, h.ExpiresAtMs)
	}
	for _, e := range rec.Ended {
		if g := k.grants[e.Lease]; g != nil && g.endedMs == 0 {
			g.endedMs = e.AtMs
			k.forgotRenewal(g, e)
		}
	}
	for _, wt := range rec.Waiters {
		key := lockstate.RequestKey{Owner: wt.Owner, RequestID: wt.RequestID}
		if !k.ghosts[key] && answered(key) {
			k.ghosts[key] = true
			k.c.GhostWaiters++
			k.violate("ghost-waiter", "request %s of %s is queued although it already has an answer", wt.RequestID, wt.Owner)
		}
	}
}

// extended checks that rec, just committed, extends the record it
// replaced, as every decision of the registry's core does: the holder is
// kept or ended, no ended lease is forgotten but the oldest, pushed out of
// the bounded history by newer ends, and neither the fence sequence nor
// the floor nor the policy generation goes down. A commit that does not
// was decided on another record than the one it replaced: a registry
// replica that committed what it had cached, on a revision that came back
// with other contents after a restore (only a store's content compares
// stop that). Such a commit loses what the record it replaced held: a
// live holder (two holders at once), an end, a floor an operator raised.
func (k *checker) extended(rec *lockstate.Record) {
	prev := k.record
	k.record = rec
	if prev == nil {
		return
	}
	if why := notExtending(prev, rec); why != "" {
		k.c.LostUpdates++
		k.violate("lost-update", "a commit replaced the record without extending it (%s): decided on another record than the one it replaced", why)
	}
}

// notExtending says how rec fails to extend prev ("" when it does).
func notExtending(prev, rec *lockstate.Record) string {
	switch {
	case rec.HighestFence < prev.HighestFence:
		return fmt.Sprintf("highest fence %d → %d", prev.HighestFence, rec.HighestFence)
	case rec.Floor < prev.Floor:
		return fmt.Sprintf("floor %d → %d", prev.Floor, rec.Floor)
	case rec.PolicyGeneration < prev.PolicyGeneration:
		return fmt.Sprintf("policy generation %d → %d", prev.PolicyGeneration, rec.PolicyGeneration)
	}
	ended := make([]string, 0, len(prev.Ended)+len(rec.Ended))
	for _, e := range prev.Ended {
		ended = append(ended, e.Lease)
	}
	for _, e := range rec.Ended {
		if !slices.Contains(ended, e.Lease) {
			ended = append(ended, e.Lease)
		}
	}
	if h := prev.Holder; h != nil && (rec.Holder == nil || rec.Holder.Grant.Lease != h.Grant.Lease) &&
		!slices.ContainsFunc(rec.Ended, func(e lockstate.EndedLease) bool { return e.Lease == h.Grant.Lease }) {
		return fmt.Sprintf("holder %s (fence %d) dropped without an end", h.Grant.Lease, h.Grant.FenceToken)
	}
	ended = ended[max(len(ended)-lockstate.EndedLeasesMax, 0):]
	got := make([]string, len(rec.Ended))
	for i, e := range rec.Ended {
		got[i] = e.Lease
	}
	if !slices.Equal(got, ended) {
		return fmt.Sprintf("ended leases %v, after %v", got, ended)
	}
	return ""
}

// restored reads the main resource's record after a restore (which is not
// a commit: the record it replaced is not the registry's decision).
func (k *checker) restored() {
	snap, err := k.w.store.Read(context.Background(), k.w.res.name, nil)
	if err != nil {
		panic("sim: read the restored store: " + err.Error())
	}
	k.record = snap.Record
	k.w.recordRev = snap.RecordRev
	k.afterRestore = true
	if k.w.cfg.restoreUnseen {
		return
	}
	k.historyMax = 0
	if snap.Record != nil {
		k.historyMax = snap.Record.HighestFence
	}
}

// forgotRenewal notices a lease the registry expired before the expiry it
// had committed: it judged expiry on a record that lost a renewal (a
// restore), which is the registry going backwards. The grant stays live,
// for the checker, until its committed expiry, as a grant a restore
// forgot does, and overlapping grants are judged by their fences.
func (k *checker) forgotRenewal(g *grantTruth, e lockstate.EndedLease) {
	if e.State != grant.StateExpired || e.AtMs >= g.lastExpMs || g.endForgot {
		return
	}
	g.endForgot = true
	k.regressions++
	k.c.ForgottenRenewals++
	k.w.tracef("checker: lease %s expired at %d ms, before its committed expiry %d ms: a renewal was forgotten",
		e.Lease, e.AtMs-epochBase.UnixMilli(), g.lastExpMs-epochBase.UnixMilli())
}

// said reads a statement the registry made about a grant: an acquire's,
// renewal's or status query's answer. A HELD statement about a grant a
// higher fence already superseded, or a commit already ended, is the
// registry going backwards as surely as a fence issued twice: in a
// consistent history a grant is said HELD only before either (a restore
// that lost the release and the next grant makes the registry say it
// again, and a gate that sees it after the higher fence rightly pauses).
// The grant is revived: live again until its committed expiry, and judged
// as a regressed grant.
func (k *checker) said(is wire.Issued) {
	// A fresh grant carrying its own held statement says HELD itself.
	if st, _, _, ok := is.Statement(); !ok || st != grant.StateHeld {
		return
	}
	g := k.grants[is.Grant.Lease]
	now := k.w.regClock.atMs(k.w.now)
	if g == nil || g.regressed || (g.fence >= k.issuedMax && (g.endedMs == 0 || now < g.endedMs)) {
		return
	}
	g.regressed, g.revived, g.endedMs, g.endForgot = true, true, 0, false
	k.regressions++
	k.c.RevivedGrants++
	k.w.tracef("checker: lease %s (fence %d) said HELD after fence %d was granted or the lease ended: the registry went backwards",
		is.Grant.Lease, g.fence, k.issuedMax)
}

// live reports whether lease is a holder the registry committed and has
// not let go: it was granted, it has not passed its last committed expiry
// by the registry's clock, and no commit ended it (release, expiry,
// revocation). Outside a restore the registry never grants while another
// grant lives, so this is "the current holder". A store restored from an
// old snapshot forgets a grant without ending it and may grant again while
// it lives: the checker keeps both live, because the registry never
// decided otherwise, and judges their order by the fence (a write below a
// fence already accepted is stale; a regressed grant accepted after an
// equal or higher fence is RegressionAccepted).
func (k *checker) live(lease string) bool {
	g := k.grants[lease]
	now := k.w.regClock.atMs(k.w.now)
	return g != nil && now < g.lastExpMs && (g.endedMs == 0 || g.endForgot || now < g.endedMs)
}

// endMs is the true instant a grant stopped being the holder, or -1.
// heldLong marks lease as held on purpose before its first write, so its
// first write is not a handoff figure.
func (k *checker) heldLong(lease string) {
	if g := k.grants[lease]; g != nil {
		g.heldLong = true
	}
}

// revived reports whether the registry said lease HELD again after it
// went backwards (see said).
func (k *checker) revived(lease string) bool {
	g := k.grants[lease]
	return g != nil && g.revived
}

// expiresMs is the latest committed expiry of lease (registry clock, Unix
// ms), 0 if unknown.
func (k *checker) expiresMs(lease string) int64 {
	if g := k.grants[lease]; g != nil {
		return g.lastExpMs
	}
	return 0
}

func (k *checker) endMs(lease string) int64 {
	g := k.grants[lease]
	if g == nil {
		return -1
	}
	end := g.lastExpMs
	if g.endedMs != 0 {
		end = min(end, g.endedMs)
	}
	return end - epochBase.UnixMilli()
}

// held records that worker p learnt it holds lease, having first asked at
// attemptMs: the handoff latency from the previous lease's end. Two kinds
// of handoff are kept apart (HandoffExcusedMs), out of the budgeted
// percentile: one during which a partition cut the worker from the
// registry (the network's outage, not the handoff's), and one after the
// registry's store was restored (the restored record's holder, timed
// from an end the restore undid, holds for whatever TTL it had). Before
// the TTL sweep both were hidden behind 3 s leases: a grant the worker
// could not hear of expired, and the next was timed from that expiry; a
// long lease waits, as it would in production.
func (k *checker) held(lease string, attemptMs int64, p party) {
	g := k.grants[lease]
	if g == nil || g.prev == "" || g.handoffFrom != 0 {
		return
	}
	from := max(k.endMs(g.prev), attemptMs)
	g.handoffFrom = max(from, 1)
	if k.afterRestore || k.w.cutDuring(p, pRegistry, from, k.w.now) {
		k.c.HandoffExcusedMs = append(k.c.HandoffExcusedMs, k.w.now-from)
		return
	}
	k.c.HandoffMs = append(k.c.HandoffMs, k.w.now-from)
}

// received notes that a grant's answer reached its worker.
func (k *checker) received(lease string) {
	if g := k.grants[lease]; g != nil {
		g.received = true
	}
}

// blockedByRestore reports whether, at the round's end, the resource is
// held by a grant the restored registry issued again to a request it had
// granted before (the restore forgot it) and whose answer reached no
// worker, live or ended within the handoff budget and blockedSlackMs: a
// MUTATION_UNKNOWN reconcile still open waits behind the restore, not
// the protocol. That is a late copy of an acquire (the late fault)
// reaching the restored registry, which cannot tell it from a retry of
// the request it forgot and grants it afresh; its answer goes to nobody
// (the client had its answer and moved on), so the lease holds the
// resource to its TTL, up to 10 minutes, as a lease the restore revived
// does — the reason a reconcile resolved after a restore is not budgeted
// either. A grant a worker received, a first grant of its request, or
// the restored record's own holder never excuses an open reconcile.
func (k *checker) blockedByRestore() bool {
	if k.record == nil || k.record.Holder == nil {
		return false
	}
	g := k.grants[k.record.Holder.Grant.Lease]
	return g != nil && g.reissued && !g.received &&
		g.lastExpMs+k.w.cfg.HandoffBudgetMs+blockedSlackMs > k.w.regClock.atMs(k.w.now)
}

// blockedSlackMs is, beside the handoff budget, how long a reconcile may
// take after the lease it waited behind ends (lock-delay, the fencing
// write, the next ask of the resource) and still count as blocked by it.
const blockedSlackMs = 2 * reconcileMs

// observeStatus notices a status proof issued further in the gate's future
// than its skew bound allows: the gate's clock lags the registry's beyond
// the bound, and status freshness can no longer be trusted.
func (k *checker) observeStatus(m *gate.Mutation, gateNow time.Time) {
	if ev, ok := evidenceOf(m); ok && ev.IssuedAt.UnixMilli()-gateNow.UnixMilli() > k.w.cfg.SkewBoundMs {
		k.skewSeen = true
	}
}

// decision classifies one gate decision on r.
func (k *checker) decision(r *resource, m *gate.Mutation, o origin, d decided) {
	c := k.c
	c.Decisions++
	c.Outcomes[outcomeIndex(d.out)]++
	switch d.alarm {
	case gate.AlarmRegression:
		k.alarms++
		c.RegressionAlarms++
	case gate.AlarmSuspected:
		k.alarms++
		c.RegressionSuspected++
	}
	if d.out != gate.Accepted && d.after.HighestFence != d.before.HighestFence {
		c.HighestFencePolluted++
		k.violate("highestFence-polluted", "%s changed highestFence %d → %d on fence %d", d.out, d.before.HighestFence, d.after.HighestFence, m.FenceToken)
	}
	if o.writer == nil && !o.buggy {
		c.AttacksSent[o.attack]++
	} else if g := k.grants[m.Lease]; g != nil && g.regressed && r == k.w.res && k.evident(m, d.before, r.clock.at(k.w.now)) {
		k.regressedAt = true
	}
	if r == k.w.res {
		k.availability(m, o, d)
	}
	if !d.applied {
		return
	}
	c.Accepted++
	if o.writer == nil && !o.buggy {
		k.forged(o, m)
		return
	}
	k.accepted(r, m)
}

// evident reports whether a regressed grant's write gave the gate proof
// that the registry went backwards, by the gate's own definitions: its
// fence equals the highest accepted under another grant, or it is below
// it with a HELD proof (fresh by gate.StatusEvidence.ProvesHeld) issued
// more than the skew bound after the grant at highest. A regressed grant
// whose fence the gate has not seen, or whose proof proves nothing, gives
// none, and no alarm is owed.
func (k *checker) evident(m *gate.Mutation, st gate.FenceState, gateNow time.Time) bool {
	if m.FenceToken > st.HighestFence || m.FenceToken <= st.Floor {
		return false
	}
	if g, err := grant.ParseGrant(m.Grant); err == nil && m.FenceToken == st.HighestFence && !st.GrantDigest.IsZero() && g.Digest() != st.GrantDigest {
		return true
	}
	ev, ok := evidenceOf(m)
	skew := k.w.cfg.skewBound()
	return m.FenceToken < st.HighestFence && ok && ev.ProvesHeld(gateNow, skew) &&
		!st.GrantIssuedAt.IsZero() && ev.IssuedAt.After(st.GrantIssuedAt.Add(skew))
}

// availability counts the two ways a gate can stop a resource without a
// real regression: a pause while the registry never went backwards
// (spurious), and the newest holder whose first write is refused by the
// fence checks or a pause while the registry never went backwards
// (blocked handoff).
func (k *checker) availability(m *gate.Mutation, o origin, d decided) {
	c := k.c
	if d.after.Paused && !d.before.Paused && k.regressions == 0 {
		c.SpuriousPauses++
		k.violate("spurious-pause", "%s paused the resource on fence %d segment %d, and the registry never went backwards",
			d.out, m.FenceToken, m.SegmentSeq)
	}
	g := k.grants[m.Lease]
	if o.writer == nil || o.buggy || g == nil || g.regressed || g.firstAnswer || m.SegmentSeq != 1 {
		return
	}
	g.firstAnswer = true
	if g.fence < k.issuedMax || !k.live(m.Lease) {
		return // not the newest holder any more: its refusal is its own lateness
	}
	if m.FenceToken <= d.before.Floor {
		return // granted before the operator's repair raised the floor over it: the repair's doing
	}
	switch d.out {
	case gate.FenceRegression, gate.StaleOwner, gate.RootMismatch, gate.ResourcePaused:
	default:
		return
	}
	if k.regressions > 0 {
		return // the registry really went backwards: refusing is the gate's duty, and the operator resumes
	}
	c.BlockedHandoffs++
	k.violate("blocked-handoff", "the newest holder %s (fence %d) was refused %s on its first write", m.Lease, m.FenceToken, d.out)
}

func (k *checker) forged(o origin, m *gate.Mutation) {
	if o.attack == attackExpiredStatus && k.w.cfg.StatusQuery && k.live(m.Lease) {
		// A gate that queries the registry ignores the stale proof and
		// asks about the grant, which is still held: with the owner's
		// stolen identity this is the owner writing, not a forgery.
		return
	}
	if o.attack == attackExpiredStatus && k.w.beyondBound && k.acceptedMax[k.w.res] <= m.FenceToken {
		k.slipped++ // an expired proof looked fresh to a gate clock beyond the bound
		return
	}
	k.c.ForgedAccepted++
	k.c.ForgedByKind[o.attack]++
	k.violate("forged-accepted", "%s envelope accepted: fence %d segment %d", o.attack, m.FenceToken, m.SegmentSeq)
}

func (k *checker) accepted(r *resource, m *gate.Mutation) {
	c, fence := k.c, m.FenceToken
	g := k.grants[m.Lease]
	if g != nil && g.regressed {
		for _, fl := range k.acceptedBy[r] {
			if fl.fence >= fence && fl.lease != m.Lease {
				c.RegressionAccepted++
				k.violate("regression-accepted", "regressed grant %s (fence %d) accepted after fence %d of %s", m.Lease, fence, fl.fence, fl.lease)
				break
			}
		}
	}
	if want := k.lastSeq[m.Lease] + 1; m.SegmentSeq != want {
		c.SegmentSkipAccepted++
		k.violate("segment-skip-accepted", "lease %s segment %d accepted, expected %d", m.Lease, m.SegmentSeq, want)
	}
	k.lastSeq[m.Lease] = max(k.lastSeq[m.Lease], m.SegmentSeq)
	switch {
	case fence < k.acceptedMax[r]:
		c.StaleAccepted++
		c.StaleAfterHigherFence++
		k.violate("stale-accepted", "fence %d segment %d accepted after fence %d", fence, m.SegmentSeq, k.acceptedMax[r])
	case !k.live(m.Lease) && k.w.beyondBound && k.w.cfg.mode() != gate.ModeShadow:
		k.slipped++
	case !k.live(m.Lease):
		c.StaleAccepted++
		c.StaleNotHolder++
		k.violate("stale-accepted", "lease %s (fence %d) not the registry's holder when segment %d was accepted", m.Lease, fence, m.SegmentSeq)
	}
	k.acceptedMax[r] = max(k.acceptedMax[r], fence)
	if n := len(k.acceptedBy[r]); n == 0 || k.acceptedBy[r][n-1].lease != m.Lease {
		k.acceptedBy[r] = append(k.acceptedBy[r], fenceLease{fence, m.Lease})
	}
	if g != nil && !g.firstWrite {
		g.firstWrite = true
		if g.handoffFrom != 0 && !g.heldLong {
			c.FirstWriteMs = append(c.FirstWriteMs, k.w.now-g.handoffFrom)
		}
	}
}

// finish closes the round's books: beyond-bound slips and whether the
// skew monitor saw the lagging clock.
func (k *checker) finish() {
	c := k.c
	if k.regressedAt && k.alarms == 0 {
		c.RegressionNotAlarmed++
		k.violate("regression-not-alarmed", "a grant re-issued at an old fence reached the gate and no alarm was raised")
	}
	if k.w.beyondBound {
		c.BeyondBoundRounds++
		if k.skewSeen {
			c.BeyondBoundDetected++
		}
		c.SlippedBeyondBound += k.slipped
		if k.slipped > 0 && !k.skewSeen {
			c.SlippedUndetected += k.slipped
			k.violate("beyond-bound-undetected", "%d writes slipped through with the gate clock beyond the skew bound, and nothing detected it", k.slipped)
		}
	}
}

// unusable counts a grant that arrived with its local deadline already
// passed: the worker cannot use it until a renewal answers, and a waiter
// that gives up such a grant never runs.
func (k *checker) unusable(worker string, g *grant.Grant, attemptMs int64) {
	k.c.UnusableGrants++
	k.violate("unusable-grant", "%s got lease %s (fence %d, TTL %d ms) %d ms after it asked, its local deadline already passed",
		worker, g.Lease, g.FenceToken, g.TTLMs, attemptMs)
}

// shortTTLMs: a lease shorter than this is short (the band of issue 42:
// the minimum, 2 s, to the simulator's one TTL before the sweep).
const shortTTLMs = 3000

// heldPastDeadline counts a lease that still reported HELD or RENEWING
// (its state, or what a reader is told) after its local deadline and
// after the driver's timer on the deadline had its turn.
func (k *checker) heldPastDeadline(worker string, g *grant.Grant, st core.LeaseState, past time.Duration) {
	k.c.HeldPastDeadline++
	if g.TTLMs < shortTTLMs {
		k.c.HeldPastDeadlineShort++
	}
	k.violate("held-past-deadline", "%s's lease %s (TTL %d ms) reported %s %s after its local deadline", worker, g.Lease, g.TTLMs, st, past)
}

// effectPastDeadline counts an effect a worker started after its lease's
// local deadline because the lease said it could.
func (k *checker) effectPastDeadline(worker string, g *grant.Grant, past time.Duration) {
	k.c.EffectsPastDeadline++
	if g.TTLMs < shortTTLMs {
		k.c.EffectsPastDeadlineShort++
	}
	k.violate("effect-past-deadline", "%s started a segment under lease %s (TTL %d ms) %s after its local deadline", worker, g.Lease, g.TTLMs, past)
}

func (k *checker) violate(kind, format string, args ...any) {
	k.c.violation(k.w.round, k.w.seed, kind, fmt.Sprintf(format, args...))
}
