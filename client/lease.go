package client

import (
	"context"
	"sync"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Lease is one held grant and the shell that keeps it: it renews at a
// fraction of the server TTL, refreshes the status proof before it
// expires, and the moment ownership is no longer certain it cancels Ctx()
// and refuses envelopes. Every decision is its core's (core.Lease); the
// shell owns the clock, the Transport, the goroutine and the locks: it
// feeds the core what happened and performs the call the core asks for.
// The simulator drives the same core.
//
// A lease can be lost at any moment without the client knowing (a pause,
// a partition). Ctx() and State() say what the client knows; the gate's
// fence check is what keeps a stale write out.
type Lease struct {
	*shell
	member int          // this lease's member of a lock set (0 for a plain lease)
	grant  *grant.Grant // this member's grant (immutable)

	// applyMu serializes Apply and Send; applied is the last segment they
	// saw accepted (the next is applied + 1). A set's members each count
	// their own: each is a write stream to its own gate.
	applyMu sync.Mutex
	applied uint64
}

// shell is what a lease's handles share: one core, one loop, one
// ownership context. A plain lease has one handle; a lock set has one per
// member (LockSet), all over the same shell, so the set is one state
// machine whatever member it is read through.
type shell struct {
	t     Transport
	o     Options
	owner *Session

	// Lock order: opMu, then mu, then the session's lock; the session
	// never takes a lease lock while holding its own. The session's draws
	// (the core's renewal jitter) lock a leaf of their own.
	opMu sync.Mutex // serializes registry calls: at most one in flight per lease

	mu       sync.Mutex
	core     *core.Lease
	op       string
	name     string   // the lease ID, or a set's SetName: for hooks and messages
	handles  []*Lease // every handle, in member order (one for a plain lease)
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	ended    bool
	kick     chan struct{}
	stopLoop context.CancelFunc
	// leftoversReleased: a set that ended EXPIRED released the rest of
	// its members (releaseLeftovers), once.
	leftoversReleased bool
}

// newLease starts the HELD lease an acquire's core handed over: a plain
// lease, or (g.Set) a lock set's, whose handles are one per member.
func newLease(s *Session, t Transport, o Options, g core.Granted) *Lease {
	sh := &shell{t: t, o: o, owner: s, op: g.OperationID, name: leaseName(g), done: make(chan struct{}), kick: make(chan struct{}, 1)}
	members := g.Set
	if len(members) == 0 {
		members = []wire.Issued{g.Issued}
	}
	for i, is := range members {
		sh.handles = append(sh.handles, &Lease{shell: sh, member: i, grant: is.Grant})
	}
	l := sh.handles[0]
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.cancel() // replaced below: a context exists only while ownership is certain
	l.mu.Lock()
	var jitter func() float64 // in [-1, 1) from the session's seeded rand; nil: none
	if s != nil {
		jitter = func() float64 { return s.rnd.float64()*2 - 1 }
	}
	l.core = core.NewLease(o.Limits(), g, jitter)
	notify := l.syncLocked(core.LeaseReady{})
	l.mu.Unlock()
	notify()
	if !o.Manual {
		var loopCtx context.Context
		loopCtx, l.stopLoop = context.WithCancel(context.Background())
		go l.loop(loopCtx)
	}
	return l
}

// leaseName is how hooks and messages name the lease g hands over: its
// lease ID, or a lock set's core.SetName.
func leaseName(g core.Granted) string {
	if len(g.Set) == 0 {
		return g.Issued.Grant.Lease
	}
	rs := make([]string, len(g.Set))
	for i, is := range g.Set {
		rs[i] = is.Grant.Resource
	}
	return core.SetName(rs)
}

// Grant returns the grant this lease holds (immutable).
func (l *Lease) Grant() *grant.Grant { return l.grant }

// GrantProof returns the registry's proof over the grant (the one every
// envelope carries).
func (l *Lease) GrantProof() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v := l.core.View(); v.Set != nil {
		return v.Set[l.member].GrantProof
	}
	return l.core.View().Issued.GrantProof
}

// Unsettled returns how many envelopes await a final answer (Settle):
// what a Release would drain for.
func (l *Lease) Unsettled() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.View().Unsettled
}

// OperationID returns the operation the grant's operation root binds.
func (l *Lease) OperationID() string { return l.op }

// Fence returns the grant's fence token: the per-resource number the
// gate orders writes by (Grant().FenceToken). Put it in your own writes
// where the protected resource checks a fence itself.
func (l *Lease) Fence() uint64 { return l.grant.FenceToken }

// State returns the current local state. It is never HELD or RENEWING
// at or after the local deadline (Deadline): from that instant it reads
// OWNERSHIP_UNKNOWN, even before the lease's own timer has fired.
func (l *Lease) State() LeaseState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.View().StateAt(l.o.Clock.Now())
}

// Ctx returns the ownership context: it is cancelled the instant ownership
// stops being certain (OWNERSHIP_UNKNOWN, EXPIRED, RELEASED, a release
// begins, or the local deadline passes: a timer on the deadline itself
// cancels it, even while a renewal is in flight). When the registry confirms the same grant HELD again after
// OWNERSHIP_UNKNOWN, a NEW context is issued; a cancelled one is never
// revived, so work bound to the old context stays stopped. Call Ctx again
// to get the current one.
func (l *Lease) Ctx() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() == nil && !l.core.View().CertainAt(l.o.Clock.Now()) {
		l.cancel() // the deadline passed and the timer has not run yet
		l.wake()
	}
	return l.ctx
}

// Releasing reports whether Release (or ReleaseNoDrain) began: ownership
// is then not certain, whatever State says, until the lease ends.
func (l *Lease) Releasing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.View().Releasing
}

// DrainUntil is when Release would send the release if it began now: the
// latest status-proof validUntil of the envelopes not yet settled, plus
// DrainMargin (zero when every envelope is settled).
func (l *Lease) DrainUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.View().DrainUntil
}

// Done is closed when the lease ends: EXPIRED or RELEASED.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Deadline returns the local deadline (client clock): no new effects at or
// after it unless a renewal is confirmed first.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.View().Schedule.Deadline
}

// syncLocked applies what a step of the core left (rd) and where it
// stands: the ownership context follows CertainAt (cancelled when it turns
// false; a fresh one when it turns true again), Done closes when the
// lease ends. It returns the notifications (OnTransition, the session's
// bookkeeping) to run once l.mu is released, so hooks may call back into
// the lease.
func (l *Lease) syncLocked(rd core.LeaseReady) func() {
	trans, v := rd.Transitions, l.core.View()
	certain, live := v.CertainAt(l.o.Clock.Now()), l.ctx.Err() == nil
	switch {
	case live && !certain:
		l.cancel()
	case !live && certain:
		l.ctx, l.cancel = context.WithCancel(context.Background())
	}
	ending := !l.ended && v.State.Terminal()
	if ending {
		l.ended = true
		close(l.done)
		if l.stopLoop != nil {
			l.stopLoop()
		}
	}
	hook, lease := l.o.OnTransition, l.name
	return func() {
		if ending && l.owner != nil {
			for _, h := range l.handles {
				l.owner.ended(h)
			}
		}
		if hook != nil {
			for _, t := range trans {
				hook(lease, t.From, t.To, t.Event)
			}
		}
	}
}

// loop ticks the lease whenever its core asks, until the lease ends.
func (l *Lease) loop(ctx context.Context) {
	for {
		wake := l.tick(ctx)
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
	}
}

// wake asks the loop to look at the core now.
func (l *Lease) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}
