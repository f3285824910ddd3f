package sim

import (
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/registry"
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

	acceptedMax map[*resource]uint64
	acceptedBy  map[*resource][]fenceLease // first lease accepted under each fence, in order
	lastSeq     map[string]uint64          // lease → last accepted segment
	skewSeen    bool                       // a gate saw a status issued beyond its skew bound in its future
	regressedAt bool                       // a regressed grant reached the gate
	alarms      int                        // FENCE_REGRESSION decisions this round
	slipped     int                        // accepts that only the clock bound would have stopped
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
	regressed   bool  // issued with a fence the registry had issued before
	prev        string
	handoffFrom int64 // true ms from which handoff is measured (0: none)
	firstWrite  bool
}

func newChecker(w *world, c *Counts) *checker {
	return &checker{
		w: w, c: c,
		grants:      make(map[string]*grantTruth, 4),
		acceptedMax: make(map[*resource]uint64, 2),
		acceptedBy:  make(map[*resource][]fenceLease, 2),
		lastSeq:     make(map[string]uint64, 4),
	}
}

// committed is the store's commit hook for the main resource.
func (k *checker) committed(rec *registry.Record) {
	if h := rec.Holder; h != nil {
		g := k.grants[h.Grant.Lease]
		if g == nil {
			g = &grantTruth{fence: h.Grant.FenceToken, owner: h.Grant.Owner, regressed: h.Grant.FenceToken <= k.issuedMax, prev: k.current}
			k.grants[h.Grant.Lease] = g
			if g.regressed {
				k.c.RegressedGrants++
			}
			k.issuedMax = max(k.issuedMax, g.fence)
			k.current = h.Grant.Lease
		}
		g.lastExpMs = max(g.lastExpMs, h.ExpiresAtMs)
	}
	for _, e := range rec.Ended {
		if g := k.grants[e.Lease]; g != nil && g.endedMs == 0 {
			g.endedMs = e.AtMs
		}
	}
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
	return g != nil && now < g.lastExpMs && (g.endedMs == 0 || now < g.endedMs)
}

// endMs is the true instant a grant stopped being the holder, or -1.
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

// held records that a worker learnt it holds lease, having first asked at
// attemptMs: the handoff latency from the previous lease's end.
func (k *checker) held(lease string, attemptMs int64) {
	g := k.grants[lease]
	if g == nil || g.prev == "" || g.handoffFrom != 0 {
		return
	}
	from := max(k.endMs(g.prev), attemptMs)
	g.handoffFrom = max(from, 1)
	k.c.HandoffMs = append(k.c.HandoffMs, k.w.now-from)
}

// observeStatus notices a status proof issued further in the gate's future
// than its skew bound allows: the gate's clock lags the registry's beyond
// the bound, and status freshness can no longer be trusted.
func (k *checker) observeStatus(r *resource, v *gate.Verified, gateNow time.Time) {
	if v.Status != nil && v.Status.IssuedAt.UnixMilli()-gateNow.UnixMilli() > k.w.cfg.SkewBoundMs {
		k.skewSeen = true
	}
}

// decision classifies one gate decision on r.
func (k *checker) decision(r *resource, m *gate.Mutation, v *gate.Verified, o origin, out gate.Outcome, highestBefore uint64) {
	c := k.c
	c.Decisions++
	c.Outcomes[outcomeIndex(out)]++
	if out == gate.FenceRegression {
		k.alarms++
	}
	if out != gate.Accepted && r.state.HighestFence != highestBefore {
		c.HighestFencePolluted++
		k.violate("highestFence-polluted", "%s changed highestFence %d → %d on fence %d", out, highestBefore, r.state.HighestFence, m.FenceToken)
	}
	if o.writer == nil && !o.buggy {
		c.AttacksSent[o.attack]++
	} else if g := k.grants[m.Lease]; g != nil && g.regressed && r == k.w.res {
		k.regressedAt = true
	}
	if out != gate.Accepted {
		return
	}
	c.Accepted++
	if o.writer == nil && !o.buggy {
		k.forged(o, m)
		return
	}
	k.accepted(r, m)
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
	case !k.live(m.Lease) && k.w.beyondBound && k.w.cfg.Break != BreakFence:
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
		if g.handoffFrom != 0 {
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

func (k *checker) violate(kind, format string, args ...any) {
	k.c.violation(k.w.round, k.w.seed, kind, fmt.Sprintf(format, args...))
}
