// This file proves, over random holds, waits, network delays, lost
// answers and client clocks (offset anywhere, rate within the bound), the
// two halves of Granted.From (the acquire core's hand-off) against a real registry stepped in
// virtual time: safety — a lease's local deadline never falls after the
// registry's own expiry of that grant; and usability — a grant whose
// answer came back (not lost) is usable for about its whole TTL however
// long it waited in the queue. The negative control counts from the
// first send, as the client did before, and must find unusable grants.
package client_test

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

// rateErrorMax is the client clock's rate error the property allows: far
// above a quartz clock's, well inside what ExpiryMargin covers over the
// waits and TTLs drawn here.
const rateErrorMax = 0.002

func TestPropertyGrantedFromIsSafeAndUsable(t *testing.T) {
	waited := 0
	rapid.Check(t, func(rt *rapid.T) {
		out := runAcquireStory(rt, func(r core.AcquireReady, _ core.AcquireView) time.Time { return r.Granted.From })
		if out.granted && out.waitedMs > int64(out.ttlMs) {
			waited++
		}
		if out.granted && out.deadlineReg.After(out.expiresReg) {
			rt.Fatalf("local deadline %s (registry clock) after the registry's expiry %s", out.deadlineReg, out.expiresReg)
		}
		if out.granted && !out.lost && out.usable < out.ttl-client.ExpiryMarginDefault-out.rtt-rateSlack(out) {
			rt.Fatalf("granted after waiting %d ms (answer not lost): usable for %s of a %s TTL (round trip %s)",
				out.waitedMs, out.usable, out.ttl, out.rtt)
		}
	})
	if waited == 0 {
		t.Error("no grant ever came after a wait longer than its TTL: the usability half was never exercised")
	}
}

// TestPropertyFirstSentRuleLeavesGrantsUnusable is the negative control:
// the old rule (the TTL counts from the request's first send) is safe
// but gives grants after a long wait a deadline already past.
func TestPropertyFirstSentRuleLeavesGrantsUnusable(t *testing.T) {
	unusable := 0
	rapid.Check(t, func(rt *rapid.T) {
		out := runAcquireStory(rt, func(_ core.AcquireReady, v core.AcquireView) time.Time { return v.FirstSent })
		if out.granted && out.usable <= 0 {
			unusable++
		}
	})
	if unusable == 0 {
		t.Fatal("counting from the first send never left a grant unusable: the property above cannot fail")
	}
}

func rateSlack(o storyOutcome) time.Duration {
	return time.Duration(rateErrorMax * float64(o.ttl+time.Duration(o.waitedMs)*time.Millisecond))
}

type storyOutcome struct {
	granted, lost bool
	ttlMs         uint64
	ttl, rtt      time.Duration
	waitedMs      int64
	usable        time.Duration // local deadline − when the answer arrived (client clock)
	receivedAt    time.Time     // client clock: the last answer arrived
	deadlineReg   time.Time     // the local deadline, converted to the registry's clock
	expiresReg    time.Time     // the registry's expiry of the grant
}

// runAcquireStory lets a holder keep the resource for a random time while
// a waiter's acquire core queues for it over a network with random delays
// and, sometimes, a lost answer; from computes the instant the lease's TTL
// counts from, out of the core's last answer (Granted.From: the step that
// took the answer, at its arrival) and its view.
func runAcquireStory(rt *rapid.T, from func(core.AcquireReady, core.AcquireView) time.Time) storyOutcome {
	ctx := context.Background()
	clock := clienttest.NewFakeClock()
	reg, err := clienttest.NewRegistry(clock, nil, nil)
	if err != nil {
		rt.Fatal(err)
	}
	holder, err := reg.Acquire(ctx, clienttest.OwnerA, wire.AcquireRequest{Resource: clienttest.Resource,
		OperationID: "op-a", OperationClass: "settle", RequestID: "req-a", TTLMs: 3000})
	if err != nil {
		rt.Fatal(err)
	}
	ttlMs := uint64(rapid.IntRange(2, 15).Draw(rt, "ttlS") * 1000)
	// The holder keeps the resource for 0 to 4 of the waiter's TTLs, so
	// many waits run past the waiter's own TTL.
	holdMs := int64(rapid.IntRange(0, 8).Draw(rt, "holdHalfTTLs"))*int64(ttlMs)/2 + rapid.Int64Range(0, 999).Draw(rt, "holdJitterMs")
	c := newStoryClock(rt, clock)
	o := client.Options{}.WithDefaults()
	req := wire.AcquireRequest{Resource: clienttest.Resource, OperationID: "op-b", OperationClass: "settle",
		RequestID: "req-b", TTLMs: ttlMs, WaitMs: uint64(rapid.Int64Range(1000, 30_000).Draw(rt, "waitMs"))}
	n := 0
	a := core.NewAcquire(o.Limits(), req, func() float64 { return 0.5 })
	out := storyOutcome{ttlMs: ttlMs, ttl: time.Duration(ttlMs) * time.Millisecond}
	started, renewed := clock.Now(), clock.Now()
	var (
		inflight *registry.Acquisition
		call     core.Call
		arriveAt time.Time // registry clock: the call reaches the registry
		answered bool
		last     core.AcquireReady // the core's answer to the last Step
	)
	for step := 0; step < 10_000; step++ {
		now := clock.Now()
		if holder.Grant != nil && now.Sub(started) >= time.Duration(holdMs)*time.Millisecond {
			_ = reg.Release(ctx, clienttest.OwnerA, clienttest.Resource, holder.Grant.Lease)
			holder.Grant = nil
		} else if holder.Grant != nil && now.Sub(renewed) >= time.Second {
			_, _ = reg.Renew(ctx, clienttest.OwnerA, clienttest.Resource, holder.Grant.Lease)
			renewed = now
		}
		if last.Done() {
			if last.Err != nil {
				return out
			}
			is := last.Granted.Issued
			out.granted = true
			out.waitedMs = is.Grant.IssuedAt.Sub(started).Milliseconds()
			deadline := from(last, a.View()).Add(out.ttl - o.ExpiryMargin)
			out.usable = deadline.Sub(out.receivedAt)
			out.deadlineReg = c.toRegistry(deadline)
			out.expiresReg = is.Grant.ExpiresAt
			return out
		}
		if inflight == nil && !answered {
			rd := a.Next(c.now())
			if rd.NeedsRequestID {
				n++
				a.Step(c.now(), core.NewRequest{RequestID: "req-b-" + string(rune('a'+n))})
				rd = a.Next(c.now())
			}
			if k := rd.Call; k.Kind != core.CallNone {
				call, answered = k, false
				arriveAt = now.Add(time.Duration(rapid.Int64Range(0, 300).Draw(rt, "delayMs")) * time.Millisecond)
			}
		}
		if call.Kind != core.CallNone && !answered && !now.Before(arriveAt) {
			answered = deliver(rt, reg, &inflight, call, req, a, c, &out, &last)
		}
		if answered {
			answered, call = false, core.Call{}
		}
		clock.Advance(10 * time.Millisecond)
	}
	rt.Fatalf("no final answer after 10,000 steps")
	return out
}

// deliver hands the call in flight to the registry (or steps its waiting
// acquire) and, once it has an answer, gives it to the core after a
// random delay, or loses it (last is the core's answer to that step). It
// reports whether the call is over.
func deliver(rt *rapid.T, reg *clienttest.Registry, inflight **registry.Acquisition, call core.Call,
	req wire.AcquireRequest, a *core.Acquire, c *storyClock, out *storyOutcome, last *core.AcquireReady) bool {
	ctx := context.Background()
	var (
		is  wire.Issued
		err error
	)
	switch call.Kind {
	case core.CallQueryRequest:
		c.arrived = c.now()
		is, err = reg.QueryRequest(ctx, clienttest.OwnerB, call.Request.RequestID)
	default:
		if *inflight == nil {
			r := call.Request
			r.WaitMs = req.WaitMs
			c.arrived = c.now()
			if *inflight, err = reg.StartAcquire(clienttest.OwnerB, r); err != nil {
				rt.Fatal(err)
			}
		}
		if !(*inflight).Step(ctx, false) {
			return false // still queued
		}
		is, err = (*inflight).Result()
		*inflight = nil
	}
	answerAt := c.now()
	c.skip(time.Duration(rapid.Int64Range(0, 300).Draw(rt, "backMs")) * time.Millisecond)
	if rapid.IntRange(0, 5).Draw(rt, "lose") == 0 {
		out.lost = true
		*last = a.Step(c.now(), core.Lost{Call: call})
		return true
	}
	out.receivedAt = c.now()
	out.rtt = c.arrived.Sub(call.Sent) + out.receivedAt.Sub(answerAt) // the flights, not the wait in the queue
	*last = a.Step(out.receivedAt, core.Answer{Call: call, Issued: is, Err: err})
	return true
}

// storyClock is the client's clock: the registry's, shifted by an offset
// and running at a rate within rateErrorMax.
type storyClock struct {
	reg    *clienttest.FakeClock
	offset time.Duration
	rate   float64
	// arrived is when (client clock) the call in flight reached the
	// registry.
	arrived time.Time
}

func newStoryClock(rt *rapid.T, reg *clienttest.FakeClock) *storyClock {
	return &storyClock{
		reg:    reg,
		offset: time.Duration(rapid.Int64Range(-3600, 3600).Draw(rt, "offsetS")) * time.Second,
		rate:   1 + rateErrorMax*(rapid.Float64Range(-1, 1).Draw(rt, "rate")),
	}
}

func (c *storyClock) now() time.Time {
	since := c.reg.Now().Sub(clienttest.T0)
	return clienttest.T0.Add(c.offset + time.Duration(float64(since)*c.rate))
}

// skip moves the client past an answer's flight: the registry clock is
// moved by the same real time.
func (c *storyClock) skip(d time.Duration) { c.reg.Advance(d) }

// toRegistry converts a client-clock instant to the registry's clock.
func (c *storyClock) toRegistry(t time.Time) time.Time {
	since := t.Sub(clienttest.T0) - c.offset
	return clienttest.T0.Add(time.Duration(float64(since) / c.rate))
}

// TestGrantedFromAfterARestart: a worker that restarted asks again with its
// journalled request ID, and the registry answers the grant an earlier
// process of it got, 2 s from its expiry. The new process's first send
// came long after the grant, so the deadline must count from before it:
// from the answered send plus those 2 s, less the TTL. Counting from the
// first send would put the deadline 8 s past the registry's expiry.
func TestGrantedFromAfterARestart(t *testing.T) {
	o := client.Options{}.WithDefaults()
	req := wire.AcquireRequest{Resource: clienttest.Resource, OperationID: "op", OperationClass: "settle", RequestID: "req-journalled", TTLMs: 10_000}
	a := core.NewAcquire(o.Limits(), req, func() float64 { return 0.5 })
	sent := clienttest.T0.Add(time.Minute)
	call := a.Next(sent).Call
	iss := gatetest.NewIssuer("restart")
	iss.Now = sent.Add(-8 * time.Second) // granted to the process before the restart
	g, gp := iss.Grant(gatetest.Writer{Resource: req.Resource, Owner: "worker", Lease: "lease-old", OperationID: "op", Fence: 3})
	g.RequestID, g.TTLMs, g.ExpiresAt = req.RequestID, req.TTLMs, iss.Now.Add(10*time.Second)
	iss.Now, iss.StatusValidFor = sent, time.Second
	st, sp := iss.Status(g, grant.StateHeld)
	r := a.Step(sent.Add(10*time.Millisecond), core.Answer{Call: call,
		Issued: wire.Issued{Grant: g, GrantProof: gp, Status: st, StatusProof: sp, ExpiresAfterMs: 2000}})
	if r.Granted == nil {
		t.Fatalf("the core did not take the grant: %v", r.Err)
	}
	if from := r.Granted.From; !from.Equal(sent.Add(-8 * time.Second)) {
		t.Fatalf("Granted.From %s, want %s: 2 s before expiry less the 10 s TTL", from.Sub(sent), -8*time.Second)
	}
}
