package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/wire"
)

// callsPerTickMax bounds the calls one Tick makes: a renewal lost, the
// query that follows at once, and one more; the core then waits for a
// timer (QueryInterval), so a Tick never spins.
const callsPerTickMax = 4

// Tick does whatever the lease's core asks for at the clock's now —
// renew, refresh the status proof, notice the local deadline, query the
// registry while OWNERSHIP_UNKNOWN, send a release whose drain is over —
// synchronously, and returns the state after. The background loop calls
// it; with Options.Manual the caller (a deterministic test) does. ctx
// bounds the calls.
func (l *Lease) Tick(ctx context.Context) LeaseState {
	l.tick(ctx)
	return l.State()
}

// tick is Tick; it returns when the core next wants to be asked (zero:
// only when something changes). After callsPerTickMax calls it returns
// now, so that the loop asks again at once: a Tick never spins, and the
// loop never forgets the core.
func (l *Lease) tick(ctx context.Context) time.Time {
	l.opMu.Lock()
	defer l.opMu.Unlock()
	for range callsPerTickMax {
		rd := l.next()
		if rd.Call.Kind == core.CallNone {
			return rd.Wake
		}
		l.do(ctx, rd)
	}
	return l.o.Clock.Now()
}

// next feeds the core the clock's now (Next: the tick) and applies what
// it left.
func (l *Lease) next() core.LeaseReady {
	l.mu.Lock()
	rd := l.core.Next(l.o.Clock.Now())
	notify := l.syncLocked(rd)
	l.mu.Unlock()
	notify()
	return rd
}

// step feeds the core one input at the clock's now and applies what it
// left.
func (l *Lease) step(in core.LeaseInput) core.LeaseReady {
	l.mu.Lock()
	rd := l.core.Step(l.o.Clock.Now(), in)
	notify := l.syncLocked(rd)
	l.mu.Unlock()
	notify()
	return rd
}

// do makes the call the core asked for (rd.Call) and feeds it the answer.
// While the call is in flight a timer on the local deadline (rd.Wake,
// while ownership is certain) stands guard: if the deadline comes first,
// the shell ticks the core then (Next, with the call in flight, makes no
// other call and steps the deadline), and the ownership context is
// cancelled at the deadline, not when the call's answer or timeout comes.
func (l *Lease) do(ctx context.Context, rd core.LeaseReady) error {
	ans := timedCall(ctx, l.o.Clock, l.t, rd.Call, rd.Wake, func() { l.next() })
	l.step(ans)
	return ans.Err
}

// timedCall makes call over t with its timeout by the injected clock, so
// a simulated network's delay is judged in the clock's time, not the
// machine's, and returns its answer (a call past its timeout is
// cancelled, and answers with ctx's error: lost). The call runs on a
// goroutine of its own; if alarm is not zero, tick runs on this one once
// the clock reaches it while the call is still in flight (a lease's local
// deadline), so the core is only ever fed from here.
func timedCall(ctx context.Context, c Clock, t Transport, call core.Call, alarm time.Time, tick func()) core.Answer {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timeout := c.After(call.Timeout) // set before the call starts: its time counts from now
	var alarmC <-chan time.Time
	if !alarm.IsZero() {
		alarmC = c.After(alarm.Sub(c.Now()))
	}
	answered := make(chan core.Answer, 1)
	go func() { answered <- perform(cctx, t, call) }()
	for {
		select {
		case a := <-answered:
			return a
		case <-timeout:
			timeout, alarmC = nil, nil
			cancel()
		case <-alarmC:
			alarmC = nil
			tick()
		}
	}
}

// perform makes one call a core asked for over t: the one place a core's
// call becomes a Transport call (a lock set's: setPerform).
func perform(ctx context.Context, t Transport, call core.Call) core.Answer {
	if call.Set != nil || call.SetRequest != nil {
		return setPerform(ctx, t, call)
	}
	a := core.Answer{Call: call}
	switch call.Kind {
	case core.CallAcquire:
		a.Issued, a.Err = t.Acquire(ctx, call.Request)
	case core.CallQueryRequest:
		a.Issued, a.Err = t.QueryRequest(ctx, call.Request.RequestID)
	case core.CallRefresh:
		a.Issued, a.Err = t.Status(ctx, call.Grant)
	case core.CallRelease:
		a.Err = t.Release(ctx, call.Grant.Resource, call.Grant.Lease)
	default: // CallRenew, CallQuery
		a.Issued, a.Err = t.Renew(ctx, call.Grant.Resource, call.Grant.Lease)
	}
	return a
}

// Release gives the lease up, after draining: ownership stops being
// certain at once (Ctx() is cancelled, envelopes are refused), and the
// release is sent once no envelope built by Envelope and not Settled can
// still be accepted — its status proof's validUntil plus DrainMargin
// (DrainUntil). A status proof outlives a release, so without
// the drain a copy of a write whose answer was lost could be accepted
// after the registry freed the resource and before the next owner wrote.
// Settle every envelope the resource answered, and Release returns at
// once. A lost release answer is retried (release is idempotent at the
// registry) until the registry answers or ctx ends; after ctx ends the
// lease keeps trying in the background unless Options.Manual.
//
// Releasing the lock is not completing the business: a write sent before
// Release whose answer was lost is still MUTATION_UNKNOWN (see Resolver).
//
// A lease the registry already considers ended goes to EXPIRED and Release
// returns nil: either way nothing is held any more. A lock set that
// ended EXPIRED (one member lost) releases its other members, each by an
// ordinary release once the drain is over (core.LeaseView.Leftovers), so
// their resources need not wait out the TTL; an error then says a member
// may stay held until its TTL.
func (l *Lease) Release(ctx context.Context) error { return l.release(ctx, true) }

// ReleaseNoDrain is Release without the drain: the release is sent at
// once. Use it only when no copy of an unsettled envelope can reach a
// gate any more (its transport is closed, or its outcome is known by
// other means); otherwise such a copy can be accepted after the release.
func (l *Lease) ReleaseNoDrain(ctx context.Context) error { return l.release(ctx, false) }

func (l *Lease) release(ctx context.Context, drain bool) error {
	l.step(core.Release{Drain: drain})
	l.wake()
	var last error
	for {
		l.opMu.Lock()
		rd := l.next()
		l.mu.Lock()
		ended := l.core.View().State.Terminal()
		l.mu.Unlock()
		if ended {
			l.opMu.Unlock()
			return l.releaseLeftovers(ctx)
		}
		if rd.Call.Kind != core.CallNone {
			err := l.do(ctx, rd)
			l.opMu.Unlock()
			if err != nil && ctx.Err() == nil {
				last = fmt.Errorf("client: release %s: %w", l.grant.Lease, err)
			}
			continue
		}
		l.opMu.Unlock()
		var timer <-chan time.Time
		if !rd.Wake.IsZero() {
			timer = l.o.Clock.After(rd.Wake.Sub(l.o.Clock.Now()))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("client: release %s: %w (last: %w)", l.grant.Lease, ctx.Err(), last)
		case <-timer:
		}
	}
}

// releaseLeftovers releases, once, what a lock set that ended EXPIRED
// may still hold (core.LeaseView.Leftovers), each member by an ordinary
// release at the drain's end. A refusal (the member already ended) is as
// good as a release; a lost answer is returned, the member ends at its
// TTL.
func (l *Lease) releaseLeftovers(ctx context.Context) error {
	l.mu.Lock()
	v := l.core.View()
	members, at := v.Leftovers()
	if l.leftoversReleased || members == nil {
		l.mu.Unlock()
		return nil
	}
	l.leftoversReleased = true
	l.mu.Unlock()
	if d := at.Sub(l.o.Clock.Now()); d > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("client: release the rest of lock set %s: %w", l.name, ctx.Err())
		case <-l.o.Clock.After(d):
		}
	}
	var lost error
	timeout := l.o.Limits().LeaseCallTimeout(time.Duration(members[0].TTLMs) * time.Millisecond)
	for _, g := range members {
		call := core.Call{Kind: core.CallRelease, Sent: l.o.Clock.Now(), Timeout: timeout, Grant: g}
		if a := timedCall(ctx, l.o.Clock, l.t, call, time.Time{}, nil); a.Err != nil && wire.CodeOf(a.Err) == "" && !errors.Is(a.Err, ErrRefused) {
			lost = fmt.Errorf("client: release %s of lock set %s: %w (it ends at its TTL)", g.Resource, l.name, a.Err)
		}
	}
	return lost
}
