package client

import (
	"context"
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
func (l *Lease) Tick(ctx context.Context) State {
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
		l.mu.Lock()
		call, at := l.core.Next(l.o.Clock.Now())
		notify := l.syncLocked()
		l.mu.Unlock()
		notify()
		if call.Kind == core.CallNone {
			return at
		}
		l.do(ctx, call)
	}
	return l.o.Clock.Now()
}

// do makes one call the core asked for and gives it the answer. While the
// call is in flight a timer on the local deadline stands guard: if the
// deadline comes first, the core steps it at once (Next, with the call
// still in flight, makes no other call) and the ownership context is
// cancelled then, not when the call's answer or timeout comes.
func (l *Lease) do(ctx context.Context, call core.Call) error {
	g := l.core.Grant()
	var deadline time.Time // zero: nothing to guard (ownership is not certain)
	l.mu.Lock()
	if l.core.Certain() {
		deadline = l.core.Schedule().Deadline
	}
	l.mu.Unlock()
	guard := func() {
		l.mu.Lock()
		if l.core.Inflight() == call {
			l.core.Next(l.o.Clock.Now())
		}
		notify := l.syncLocked()
		l.mu.Unlock()
		notify()
	}
	is, err := timedCall(ctx, l.o.Clock, call.Timeout, deadline, guard, func(c context.Context) (wire.Issued, error) {
		switch call.Kind {
		case core.CallRefresh:
			return l.t.Status(c, g)
		case core.CallRelease:
			return wire.Issued{}, l.t.Release(c, g.Resource, g.Lease)
		}
		return l.t.Renew(c, g.Resource, g.Lease)
	})
	l.mu.Lock()
	l.core.Answer(l.o.Clock.Now(), call, is, err)
	notify := l.syncLocked()
	l.mu.Unlock()
	notify()
	return err
}

// timedCall runs fn with a deadline by the injected clock, so a simulated
// network's delay is judged in the clock's time, not the machine's. If
// at is not zero, guard runs once the clock reaches it while fn is still
// running (a lease's local deadline); timedCall returns only after guard
// did, if it started.
func timedCall(ctx context.Context, c Clock, d time.Duration, at time.Time, guard func(), fn func(context.Context) (wire.Issued, error)) (wire.Issued, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, watched := make(chan struct{}), make(chan struct{})
	timeout := c.After(d) // set before fn starts: the call's time counts from now
	var alarm <-chan time.Time
	if !at.IsZero() {
		alarm = c.After(at.Sub(c.Now()))
	}
	go func() {
		defer close(watched)
		for {
			select {
			case <-timeout:
				cancel()
				return
			case <-alarm:
				alarm = nil
				guard()
			case <-stop:
				return
			}
		}
	}()
	is, err := fn(cctx)
	close(stop)
	<-watched
	return is, err
}

// Release gives the lease up, after draining: ownership stops being
// certain at once (Ctx() is cancelled, envelopes are refused), and the
// release is sent once no envelope built by Envelope and not Settled can
// still be accepted — its status proof's validUntil plus DrainMargin
// (LeaseCore.DrainUntil). A status proof outlives a release, so without
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
// returns nil: either way nothing is held any more.
func (l *Lease) Release(ctx context.Context) error { return l.release(ctx, true) }

// ReleaseNoDrain is Release without the drain: the release is sent at
// once. Use it only when no copy of an unsettled envelope can reach a
// gate any more (its transport is closed, or its outcome is known by
// other means); otherwise such a copy can be accepted after the release.
func (l *Lease) ReleaseNoDrain(ctx context.Context) error { return l.release(ctx, false) }

func (l *Lease) release(ctx context.Context, drain bool) error {
	l.mu.Lock()
	l.core.BeginRelease(l.o.Clock.Now(), drain)
	notify := l.syncLocked()
	l.mu.Unlock()
	notify()
	l.wake()
	var last error
	for {
		l.opMu.Lock()
		l.mu.Lock()
		call, wake := l.core.Next(l.o.Clock.Now())
		notify := l.syncLocked()
		st := l.core.State()
		l.mu.Unlock()
		notify()
		if st.Terminal() {
			l.opMu.Unlock()
			return nil
		}
		if call.Kind != core.CallNone {
			err := l.do(ctx, call)
			l.opMu.Unlock()
			if err != nil && ctx.Err() == nil {
				last = fmt.Errorf("client: release %s: %w", l.core.Grant().Lease, err)
			}
			continue
		}
		l.opMu.Unlock()
		var timer <-chan time.Time
		if !wake.IsZero() {
			timer = l.o.Clock.After(wake.Sub(l.o.Clock.Now()))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("client: release %s: %w (last: %w)", l.core.Grant().Lease, ctx.Err(), last)
		case <-timer:
		}
	}
}
