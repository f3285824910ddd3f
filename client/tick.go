package client

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// Tick does whatever the lease's schedule asks for at the clock's now —
// renew, refresh the status proof, notice the local deadline, or query the
// registry while OWNERSHIP_UNKNOWN — synchronously, and returns the state
// after. The background loop calls it; with Options.Manual the caller
// (the simulator, a deterministic test) does. ctx bounds the calls.
func (l *Lease) Tick(ctx context.Context) State {
	l.opMu.Lock()
	defer l.opMu.Unlock()
	l.mu.Lock()
	what, _ := l.sched.Check(l.o, l.m.state, l.o.Clock.Now())
	releasing := l.releasing
	var notify func()
	switch what {
	case DueDeadline:
		notify = l.stepLocked(EvDeadline)
	case DueRenew, DueRefresh:
		notify = l.stepLocked(EvRenewDue)
	}
	l.mu.Unlock()
	if notify != nil {
		notify()
	}
	switch what {
	case DueDeadline:
		l.query(ctx)
	case DueRenew:
		l.renew(ctx, false)
	case DueRefresh:
		l.renew(ctx, true)
	case DueQuery:
		if releasing {
			l.releaseOnce(ctx)
		} else {
			l.query(ctx)
		}
	}
	return l.State()
}

// call runs fn with a deadline by the injected clock, so a simulated
// network's delay is judged in simulated time: CallTimeout, but at most a
// quarter of the TTL so that a short lease still learns of a lost renewal
// well before its deadline. It reports whether the answer came late.
func (l *Lease) call(ctx context.Context, fn func(context.Context) (registry.Issued, error)) (registry.Issued, error, bool) {
	return timedCall(ctx, l.o.Clock, min(l.o.CallTimeout, l.ttl()/4), fn)
}

// timedCall is call for anything holding a clock.
func timedCall(ctx context.Context, c Clock, d time.Duration, fn func(context.Context) (registry.Issued, error)) (registry.Issued, error, bool) {
	sent := c.Now()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-c.After(d):
			cancel()
		case <-stop:
		}
	}()
	is, err := fn(cctx)
	late := c.Now().Sub(sent) > d
	return is, err, late
}

// renew sends a renewal (or, with statusOnly, a status query) from
// RENEWING and steps the machine on its answer.
func (l *Lease) renew(ctx context.Context, statusOnly bool) {
	sent := l.o.Clock.Now()
	g := l.issued.Grant
	is, err, late := l.call(ctx, func(c context.Context) (registry.Issued, error) {
		if statusOnly {
			return l.t.Status(c, g)
		}
		return l.t.Renew(c, g.Resource, g.Lease)
	})
	l.mu.Lock()
	var notify func()
	switch held, refused := l.judge(is, err); {
	case held && !late:
		l.confirmLocked(is, sent, statusOnly)
		notify = l.stepLocked(EvRenewOK)
	case refused:
		notify = l.stepLocked(EvRenewRefused)
	case held && late:
		notify = l.stepLocked(EvRenewLate)
	default:
		notify = l.stepLocked(EvRenewLost)
	}
	state := l.m.state
	l.mu.Unlock()
	notify()
	if state == StateUnknown {
		l.query(ctx) // at once: the earliest the registry can settle it
	}
}

// query asks the registry about the same grant while OWNERSHIP_UNKNOWN. It
// renews: a HELD answer about the same grant both confirms ownership and
// gives a new deadline; a definite refusal confirms the grant is over.
func (l *Lease) query(ctx context.Context) {
	if l.State() != StateUnknown {
		return
	}
	sent := l.o.Clock.Now()
	g := l.issued.Grant
	is, err, late := l.call(ctx, func(c context.Context) (registry.Issued, error) {
		return l.t.Renew(c, g.Resource, g.Lease)
	})
	l.mu.Lock()
	var notify func()
	switch held, refused := l.judge(is, err); {
	case held && !late:
		l.confirmLocked(is, sent, false)
		notify = l.stepLocked(EvQueryHeld)
	case refused:
		notify = l.stepLocked(EvQueryExpired)
	default:
		notify = l.stepLocked(EvQueryUnavailable)
		l.sched.QueryAt = l.o.Clock.Now().Add(l.o.QueryInterval)
	}
	l.mu.Unlock()
	notify()
}

// judge reads a renewal or status answer: held means the registry said
// this very grant is HELD; refused means it said definitely that it is not.
func (l *Lease) judge(is registry.Issued, err error) (held, refused bool) {
	switch classify(err) {
	case answerRefused:
		return false, true
	case answerOK:
	default:
		return false, false
	}
	if is.Status == nil || is.Status.Grant != l.issued.Grant.Digest() {
		return false, false // about another grant: no answer about ours
	}
	if is.Status.State != grant.StateHeld {
		return false, true
	}
	return true, false
}

// confirmLocked records a HELD answer: a fresh status proof and, for a
// renewal, a new deadline measured from when the renewal was sent.
func (l *Lease) confirmLocked(is registry.Issued, sent time.Time, statusOnly bool) {
	l.issued.Status, l.issued.StatusProof = is.Status, is.StatusProof
	if statusOnly {
		l.sched = l.sched.Refreshed(is.Status)
		return
	}
	l.sched = Confirmed(l.o, sent, l.ttl(), is.Status, l.jitter())
}
