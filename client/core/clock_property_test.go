// This file proves the lease clock over every setting the client and the
// registry accept, drawn with their ends and the edges between margins
// weighted: the TTL from the client's shortest (TTLMin) to the
// registry's longest, every client time limit and fraction over its
// accepted range, the registry's skew bound and status-proof life. On a
// real registry, answered in time, the lease renews before its local
// deadline and is never OWNERSHIP_UNKNOWN; with answers lost or late at
// random, the core never stays HELD or RENEWING at or past its deadline
// and always names the deadline as the instant to look again while it
// is certain; and no schedule makes it call the registry without bound
// (the refresh storm of issue 42).
package core_test

import (
	"context"
	"math"
	mrand "math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

// ttlMaxMs is the registry's default longest lease.
const ttlMaxMs = 600_000

func TestPropertyLeaseClockHealthy(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { leaseClockStory(rt, false) })
}

func TestPropertyLeaseClockLossy(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { leaseClockStory(rt, true) })
}

// edgy draws a duration in [lo, hi]: one of edges (clamped into the
// range) a third of the time, else log-uniformly.
func edgy(rt *rapid.T, name string, lo, hi time.Duration, edges ...time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	if len(edges) > 0 && rapid.IntRange(0, 2).Draw(rt, name+"Edge?") == 0 {
		return min(max(rapid.SampledFrom(edges).Draw(rt, name+"Edge"), lo), hi)
	}
	x := rapid.Float64Range(math.Log(float64(lo)), math.Log(float64(hi))).Draw(rt, name)
	return min(max(time.Duration(math.Exp(x)), lo), hi)
}

// drawOptions draws every client time limit and fraction over the range
// Options.Validate accepts.
func drawOptions(rt *rapid.T) client.Options {
	ms := time.Millisecond
	o := client.Options{Manual: true}
	o.RenewJitter = rapid.SampledFrom([]float64{0.001, 0.1, 0.5, 0.99, rapid.Float64Range(0.001, 0.99).Draw(rt, "jitterAny")}).Draw(rt, "jitter")
	most := core.RenewLatestMax / (1 + o.RenewJitter)
	o.RenewFraction = rapid.SampledFrom([]float64{most, most * 0.999, 0.001, 1.0 / 3, rapid.Float64Range(0.001, most).Draw(rt, "fractionAny")}).Draw(rt, "fraction")
	o.RenewFraction = min(o.RenewFraction, most)
	o.CallTimeout = edgy(rt, "callTimeout", ms, 10*time.Second, core.CallTimeoutFloor, core.CallTimeoutFloor-ms, core.CallTimeoutFloor+ms, client.CallTimeoutDefault)
	o.ExpiryMargin = edgy(rt, "expiryMargin", ms, 10*time.Second, client.ExpiryMarginDefault, 500*ms)
	o.ProofMargin = edgy(rt, "proofMargin", ms, 5*time.Second, client.ProofMarginDefault, o.ExpiryMargin/2)
	o.ProofRefreshLead = o.ProofMargin + edgy(rt, "refreshLeadOver", ms, 5*time.Second, 500*ms, ms)
	o.QueryInterval = edgy(rt, "queryInterval", ms, 5*time.Second, client.QueryIntervalDefault)
	o.DrainMargin = edgy(rt, "drainMargin", ms, 5*time.Second, client.DrainMarginDefault)
	if err := o.Validate(); err != nil {
		rt.Fatalf("drew options Validate refuses: %v", err)
	}
	return o
}

// drawTTL draws a TTL from [TTLMin, ttlMaxMs] with the edges between the
// margins weighted: the ends, where the call timeout stops being a
// quarter of the local life, where the proof stops being capped by the
// expiry (StatusProofTTL + skew bound), where the proof margin term of
// TTLMin takes over.
func drawTTL(rt *rapid.T, o core.Limits, skew, proofTTL time.Duration) time.Duration {
	lo := o.TTLMin()
	return edgy(rt, "ttl", lo, ttlMaxMs*time.Millisecond,
		lo, lo+time.Millisecond, o.ExpiryMargin+core.CallsPerLife*o.CallTimeout, proofTTL+skew, proofTTL+skew+time.Millisecond,
		o.ExpiryMargin+2*o.ProofMargin, 15*time.Second, ttlMaxMs*time.Millisecond)
}

// leaseClockStory runs one lease for a few of its TTLs against a real
// registry, answering every call the core asks for after a drawn delay
// (with lossy, some answers are lost or late), and checks the clock's
// invariants at every step.
func leaseClockStory(rt *rapid.T, lossy bool) {
	opts := drawOptions(rt)
	o := opts.Limits()
	skew := edgy(rt, "skewBound", time.Millisecond, 900*time.Millisecond, 500*time.Millisecond, o.ExpiryMargin)
	proofTTL := edgy(rt, "statusProofTTL", time.Millisecond, 10*time.Second, 2*time.Second, o.ProofRefreshLead, o.ProofRefreshLead+time.Millisecond)
	ttl := drawTTL(rt, o, skew, proofTTL).Round(time.Millisecond) // the wire carries whole ms
	if ttl < o.TTLMin() {
		ttl += time.Millisecond
	}
	skew = skew.Round(time.Millisecond)
	if ttl <= skew { // the registry's own rule: TTLMsMin above ClockSkewMaxMs
		skew = (ttl / 2).Round(time.Millisecond)
	}
	clock := clienttest.NewFakeClock()
	reg, err := clienttest.NewRegistry(clock, nil, func(c *registry.Config) {
		c.ClockSkewMaxMs, c.StatusProofTTLMs = uint64(max(skew.Milliseconds(), 1)), uint64(max(proofTTL.Milliseconds(), 1))
		c.LockDelayMs, c.TTLMsMin = c.ClockSkewMaxMs, c.ClockSkewMaxMs+1
	})
	if err != nil {
		rt.Fatal(err)
	}
	tr := registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerA}
	ctx := context.Background()
	sent := clock.Now()
	is, err := tr.Acquire(ctx, wire.AcquireRequest{Resource: clienttest.Resource, OperationID: "op", OperationClass: "settle",
		RequestID: "req-1", TTLMs: uint64(ttl.Milliseconds())})
	if err != nil {
		rt.Fatalf("acquire of %s: %v", ttl, err)
	}
	rnd := mrand.New(mrand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1))
	l := core.NewLease(o, core.Granted{Issued: is, OperationID: "op", From: sent}, func() float64 { return rnd.Float64()*2 - 1 })
	d := &clockDriver{rt: rt, l: l, clock: clock, tr: tr, rnd: rnd, lossy: lossy, o: o, ttl: ttl}
	d.run(sent.Add(3 * time.Duration(ttl.Milliseconds()) * time.Millisecond))
}

// storyCallsMax ends a story after this many calls, however few TTLs
// passed (a tiny RenewFraction renews every few microseconds of a long
// lease): enough renewals to see the schedule settle, at a bounded cost.
const storyCallsMax = 300

type clockDriver struct {
	rt    *rapid.T
	l     *core.Lease
	clock *clienttest.FakeClock
	tr    registry.Direct
	rnd   *mrand.Rand
	lossy bool
	o     core.Limits
	ttl   time.Duration
	calls int
}

// callsMax bounds the calls of one story: renewals at most every
// RenewFraction × (1 − RenewJitter) of the local life, each followed by
// at most one refresh that finds the proof capped, other refreshes at
// most every ProofRefreshLead − ProofMargin, and the queries of a lossy
// run at most every QueryInterval (or at once after a lost renewal),
// plus slack.
func (d *clockDriver) callsMax(span time.Duration) int {
	life := d.o.Life(d.ttl)
	renew := time.Duration(float64(life) * d.o.RenewFraction * (1 - d.o.RenewJitter))
	n := 2*float64(span)/float64(max(renew, time.Microsecond)) + float64(span)/float64(d.o.ProofRefreshLead-d.o.ProofMargin)
	if d.lossy {
		n = 3*n + float64(span)/float64(d.o.QueryInterval)
	}
	return int(n) + 20
}

func (d *clockDriver) run(until time.Time) {
	start := d.clock.Now()
	limit := d.callsMax(until.Sub(start))
	for d.clock.Now().Before(until) && !d.l.View().State.Terminal() && d.calls < storyCallsMax {
		now := d.clock.Now()
		rd := d.l.Next(now)
		call, wake, v := rd.Call, rd.Wake, d.l.View()
		d.check(now, "next")
		if call.Kind == core.CallNone {
			if v.Certain() && (wake.IsZero() || wake.After(v.Schedule.Deadline)) {
				d.rt.Fatalf("certain with deadline %s, but the core asks to be woken at %s", v.Schedule.Deadline, wake)
			}
			if wake.IsZero() {
				d.rt.Fatalf("%s: nothing will ever be due", v.State)
			}
			d.clock.Advance(max(wake.Sub(now), time.Microsecond))
			continue
		}
		if d.calls++; d.calls > limit {
			d.rt.Fatalf("%d calls in %s of a %s lease (limit %d): the schedule calls the registry without bound",
				d.calls, now.Sub(start), d.ttl, limit)
		}
		d.answer(call)
	}
}

// answer makes call reach the registry and its answer come back after a
// drawn delay: within the call's timeout when healthy (its ends drawn
// often); in a lossy story a quarter of the answers are lost (the call
// times out) or late.
func (d *clockDriver) answer(call core.Call) {
	delay := time.Duration(d.rnd.Int64N(int64(call.Timeout)))
	switch d.rnd.IntN(4) {
	case 0:
		delay = 0
	case 1:
		delay = call.Timeout - time.Microsecond
	}
	lost := d.lossy && d.rnd.IntN(4) == 0
	if lost {
		delay = call.Timeout + time.Duration(d.rnd.Int64N(int64(call.Timeout)))
	}
	d.clock.Advance(delay / 2)
	is, err := d.do(call)
	d.clock.Advance(delay - delay/2)
	now := d.clock.Now()
	if lost && d.rnd.IntN(2) == 0 {
		d.l.Step(now, core.Lost{Call: call})
	} else {
		d.l.Step(now, core.Answer{Call: call, Issued: is, Err: err})
	}
	d.check(now, "answer "+call.Kind.String())
	if !d.lossy && d.l.View().State == core.StateUnknown {
		d.rt.Fatalf("healthy registry, %s lease: OWNERSHIP_UNKNOWN after a %s answered in %s (timeout %s)",
			d.ttl, call.Kind, delay, call.Timeout)
	}
}

func (d *clockDriver) do(call core.Call) (wire.Issued, error) {
	ctx, g := context.Background(), call.Grant
	switch call.Kind {
	case core.CallRefresh:
		return d.tr.Status(ctx, g)
	case core.CallRelease:
		return wire.Issued{}, d.tr.Release(ctx, g.Resource, g.Lease)
	}
	return d.tr.Renew(ctx, g.Resource, g.Lease)
}

// check is the clock's invariant after every step at now: the machine
// is not HELD or RENEWING at or past its deadline, and what a reader
// sees agrees.
func (d *clockDriver) check(now time.Time, step string) {
	v := d.l.View()
	dl := v.Schedule.Deadline
	if v.State.Certain() && !now.Before(dl) {
		d.rt.Fatalf("after %s at %s: %s with the deadline %s behind (TTL %s)", step, now, v.State, now.Sub(dl), d.ttl)
	}
	if v.StateAt(now) != v.State {
		d.rt.Fatalf("after %s: StateAt %s, machine %s", step, v.StateAt(now), v.State)
	}
}
