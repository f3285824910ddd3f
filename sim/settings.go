package sim

import (
	"math"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/registry"
)

// The simulator sweeps settings, not one point (issue 42): a proof at one
// comfortable setting says nothing about the others. Each worker draws
// its client's margins (client.Options over the range Options.Validate
// accepts, within the deployment's own assumptions: the expiry and drain
// margins cover the skew bound), each round the registry's status-proof
// life, and each acquire its TTL from the whole range the registry
// accepts, log-uniformly, with the ends and the edges between the margins
// drawn often. A TTL the worker's margins cannot keep is refused by the
// client's own rule (core.Limits.CheckTTL) before anything is sent, and
// the worker draws again from what its margins allow. Clock skew within
// the bound is FaultSkew's (partyClock).

// edgeShare is the share of draws that take one of the edges instead of
// the log-uniform value.
const edgeShare = 1.0 / 3

// Ranges the sweep draws from, in ms, where the client accepts more than
// a simulated deployment can use: a call timeout the network's usual
// round trip fits in, a proof margin a status proof outlives. The call
// timeout stops at the simulator's 300 ms: a waiter learns of a lost
// acquire answer only after it, so the handoff budget (3 s: lock-delay
// plus two retries) holds up to there; longer call timeouts are drawn by
// client/core's clock property test, which has no handoff to time.
const (
	callTimeoutMsMin   = 50
	callTimeoutMsMax   = callTimeoutMs
	marginMsMax        = 3000 // ExpiryMargin and DrainMargin, from the skew bound up
	proofMarginMsMin   = 10
	proofMarginMsMax   = 1000
	refreshOverMsMax   = 2000 // ProofRefreshLead − ProofMargin
	queryIntervalMsMin = 50
	queryIntervalMsMax = 2000
	jitterMax          = 0.5
	fractionMin        = 0.05
	// The registry's status-proof life: from above the largest proof
	// margin (a proof shorter than the margin could never be sent) to
	// five times the default.
	proofTTLMsMin = proofMarginMsMax + 500
	proofTTLMsMax = 10_000
)

// edgy draws an integer in [lo, hi]: one of edges (those inside the
// range) with probability edgeShare, else log-uniformly.
func (g rng) edgy(lo, hi int64, edges ...int64) int64 {
	if hi <= lo {
		return lo
	}
	if g.chance(edgeShare) {
		var in []int64
		for _, e := range edges {
			if e >= lo && e <= hi {
				in = append(in, e)
			}
		}
		if len(in) > 0 {
			return in[g.pick(len(in))]
		}
	}
	v := int64(math.Round(math.Exp(g.float(math.Log(float64(lo)), math.Log(float64(hi))))))
	return min(max(v, lo), hi)
}

// fraction draws a float in [lo, hi]: one of edges with probability
// edgeShare, else uniformly.
func (g rng) fraction(lo, hi float64, edges ...float64) float64 {
	if g.chance(edgeShare) && len(edges) > 0 {
		return min(max(edges[g.pick(len(edges))], lo), hi)
	}
	return g.float(lo, hi)
}

// drawClientLimits draws a worker's client options: every lease margin
// over its range, the defaults and the edges between them drawn often.
func (w *world) drawClientLimits() core.Limits {
	g, s := w.rng, w.cfg.SkewBoundMs
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	var o client.Options
	o.RenewJitter = g.fraction(0.001, jitterMax, client.RenewJitterDefault, 0.001, jitterMax)
	most := core.RenewLatestMax / (1 + o.RenewJitter)
	o.RenewFraction = g.fraction(fractionMin, most, client.RenewFractionDefault, most)
	o.CallTimeout = ms(g.edgy(callTimeoutMsMin, callTimeoutMsMax, callTimeoutMsMin, core.CallTimeoutFloor.Milliseconds(), callTimeoutMsMax))
	o.ProofMargin = ms(g.edgy(proofMarginMsMin, proofMarginMsMax, client.ProofMarginDefault.Milliseconds(), proofMarginMsMax))
	o.ExpiryMargin = ms(g.edgy(s, marginMsMax, s, s+o.ProofMargin.Milliseconds(), client.ExpiryMarginDefault.Milliseconds(), marginMsMax))
	o.ProofRefreshLead = o.ProofMargin + ms(g.edgy(1, refreshOverMsMax, 100, 500))
	o.QueryInterval = ms(g.edgy(queryIntervalMsMin, queryIntervalMsMax, client.QueryIntervalDefault.Milliseconds()))
	o.DrainMargin = ms(g.edgy(s, marginMsMax, s, client.DrainMarginDefault.Milliseconds()))
	if err := o.Validate(); err != nil {
		panic("sim: drew client options the client refuses: " + err.Error())
	}
	return o.Limits()
}

// drawProofTTLMs draws the round's registry status-proof life.
func (w *world) drawProofTTLMs() uint64 {
	return uint64(w.rng.edgy(proofTTLMsMin, proofTTLMsMax, proofTTLMsMin, 2000, proofTTLMsMax))
}

// registryTTLRange is the TTL range the round's registry accepts.
func registryTTLRange() (lo, hi int64) {
	c := registry.DefaultConfig(epochLive)
	return int64(c.TTLMsMin), int64(c.TTLMsMax)
}

// drawTTLMs draws the TTL of the worker's next request from the range
// the registry accepts, the edges between its margins drawn often: the
// range's ends, the shortest TTL the worker's margins allow, where its
// calls stop being a quarter of the local life, where the status proof
// stops being capped by the expiry (proof life + skew bound), the
// simulator's one TTL before the sweep and the registry's default. A TTL
// the client refuses (client.TTLMin) is counted and drawn again from what
// it accepts: nothing is sent for it.
func (k *worker) drawTTLMs() uint64 {
	lo, hi := registryTTLRange()
	o, g := k.limits, k.w.rng
	least := int64(math.Ceil(float64(o.TTLMin()) / float64(time.Millisecond)))
	callsEdge := (o.ExpiryMargin + core.CallsPerLife*o.CallTimeout).Milliseconds()
	proofEdge := int64(k.w.proofTTLMs) + k.w.cfg.SkewBoundMs
	edges := []int64{lo, lo + 1, least, least + 1, callsEdge, proofEdge, proofEdge + 1, 3000, 15_000, hi}
	ttl := g.edgy(lo, hi, edges...)
	if err := k.w.refusesTTL(o, time.Duration(ttl)*time.Millisecond); err != nil {
		k.w.counts.TTLRefused++
		k.w.tracef("%s: TTL %d ms refused before sending: %v", k.name, ttl, err)
		ttl = g.edgy(max(lo, least), hi, edges...)
	}
	k.w.counts.ttlDrawn(ttl, least)
	return uint64(ttl)
}
