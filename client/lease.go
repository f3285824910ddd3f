package client

import (
	"context"
	"sync"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// Lease is one held grant and the shell that keeps it: it renews at a
// fraction of the server TTL, refreshes the status proof before it
// expires, and the moment ownership is no longer certain it cancels Ctx()
// and refuses envelopes. It runs the pure state machine (Machine) with the
// injected Clock and Transport; the simulator drives the same code.
//
// A lease can be lost at any moment without the client knowing (a pause,
// a partition). Ctx() and State() say what the client knows; the gate's
// fence check is what keeps a stale write out.
type Lease struct {
	t     Transport
	o     Options
	owner *Session

	// Lock order: opMu, then mu, then the session's lock (jitter draws
	// from the session's rand under mu); the session never takes a lease
	// lock while holding its own.
	opMu sync.Mutex // serializes registry calls: at most one in flight per lease

	mu        sync.Mutex
	m         Machine
	issued    registry.Issued // grant, grant proof, latest HELD status and proof
	operation string
	sched     Schedule
	releasing bool
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	kick      chan struct{}
	stopLoop  context.CancelFunc
}

// newLease builds a HELD lease from an acquire answer sent at sent.
func newLease(s *Session, t Transport, o Options, is registry.Issued, operationID string, sent time.Time) *Lease {
	l := &Lease{t: t, o: o, owner: s, m: NewMachine(), issued: is, operation: operationID,
		done: make(chan struct{}), kick: make(chan struct{}, 1)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.cancel() // replaced below: a context exists only while ownership is certain
	l.mu.Lock()
	l.sched = Confirmed(o, sent, l.ttl(), is.Status, l.jitter())
	notify := l.stepLocked(EvAcquireOK)
	l.mu.Unlock()
	notify()
	if !o.Manual {
		var loopCtx context.Context
		loopCtx, l.stopLoop = context.WithCancel(context.Background())
		go l.loop(loopCtx)
	}
	return l
}

// Grant returns the grant this lease holds (immutable).
func (l *Lease) Grant() *grant.Grant { return l.issued.Grant }

// OperationID returns the operation the grant's operation root binds.
func (l *Lease) OperationID() string { return l.operation }

// State returns the current local state.
func (l *Lease) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.state
}

// Ctx returns the ownership context: it is cancelled the instant ownership
// stops being certain (OWNERSHIP_UNKNOWN, EXPIRED, RELEASED, or a release
// begins). When the registry confirms the same grant HELD again after
// OWNERSHIP_UNKNOWN, a NEW context is issued; a cancelled one is never
// revived, so work bound to the old context stays stopped. Call Ctx again
// to get the current one.
func (l *Lease) Ctx() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ctx
}

// Done is closed when the lease ends: EXPIRED or RELEASED.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Deadline returns the local deadline (client clock): no new effects at or
// after it unless a renewal is confirmed first.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sched.Deadline
}

func (l *Lease) ttl() time.Duration { return time.Duration(l.issued.Grant.TTLMs) * time.Millisecond }

// jitter draws from the session's seeded rand in [-1, 1).
func (l *Lease) jitter() float64 {
	if l.owner == nil {
		return 0
	}
	return l.owner.float64()*2 - 1
}

// stepLocked feeds ev to the machine and applies the effects. It returns
// the OnTransition notification to run once l.mu is released.
func (l *Lease) stepLocked(ev Event) func() {
	from := l.m.state
	to, fx := l.m.Step(ev)
	if fx.CancelCtx {
		l.cancel()
	}
	if fx.NewCtx {
		l.ctx, l.cancel = context.WithCancel(context.Background())
	}
	if fx.Query {
		l.sched.QueryAt = l.o.Clock.Now()
	}
	if fx.Done {
		l.cancel()
		close(l.done)
		if l.stopLoop != nil {
			l.stopLoop()
		}
	}
	hook, lease := l.o.OnTransition, l.issued.Grant.Lease
	return func() { // runs without l.mu held, so hooks may call back into the lease
		if fx.Done && l.owner != nil {
			l.owner.ended(l)
		}
		if hook != nil {
			hook(lease, from, to, ev)
		}
	}
}

// step is stepLocked with the lock taken and released.
func (l *Lease) step(ev Event) {
	l.mu.Lock()
	notify := l.stepLocked(ev)
	l.mu.Unlock()
	notify()
}

// loop runs Tick whenever the schedule asks, until the lease ends.
func (l *Lease) loop(ctx context.Context) {
	for {
		l.mu.Lock()
		_, wake := l.sched.Check(l.o, l.m.state, l.o.Clock.Now())
		l.mu.Unlock()
		var timer <-chan time.Time
		if !wake.IsZero() {
			timer = l.o.Clock.After(wake.Sub(l.o.Clock.Now()))
		}
		select {
		case <-ctx.Done():
			return
		case <-timer:
		case <-l.kick:
		}
		l.Tick(ctx)
	}
}

// wake asks the loop to look at the schedule now.
func (l *Lease) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}
