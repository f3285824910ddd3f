package fencedlock

import (
	"context"

	"k8s.io/client-go/tools/leaderelection"

	"github.com/fencegate/fencegate/client"
)

// ElectionConfig returns client-go's LeaderElectionConfig for this lock:
// Lock, Name and the three timings from Config, and cb with its
// OnStartedLeading given the leader's context from WithTerm: LeaseFrom
// returns the term's lease from it, and it ends when the elector's does
// or when the term does (at the first loss of certainty, before client-go
// notices). If the term ended before the elector called
// OnStartedLeading, cb.OnStartedLeading is not called at all;
// OnStoppedLeading always is. Run it with leaderelection.RunOrDie or
// NewLeaderElector. ReleaseOnCancel may be set on the result: after the
// term Get fails at once, so the release delays OnStoppedLeading by
// nothing.
func (l *Lock) ElectionConfig(cb leaderelection.LeaderCallbacks) leaderelection.LeaderElectionConfig {
	started := cb.OnStartedLeading
	cb.OnStartedLeading = func(ctx context.Context) {
		ctx, cancel, err := l.WithTerm(ctx)
		if err != nil {
			return // the term ended before the elector said it began
		}
		defer cancel()
		started(ctx)
	}
	return leaderelection.LeaderElectionConfig{Lock: l, Name: l.cfg.Resource, Callbacks: cb,
		LeaseDuration: l.cfg.LeaseDuration, RenewDeadline: l.cfg.RenewDeadline, RetryPeriod: l.cfg.RetryPeriod}
}

// WithTerm returns parent with the term in it, for work done as the
// leader: LeaseFrom(ctx) is the term's lease, and ctx ends when parent
// does or when the term does (the lease's ownership stops being certain,
// the stop lead is reached, or the lock is released), whichever comes
// first, and never revives. ErrNotLeading before the term, ErrTermOver
// after it. With controller-runtime, whose runnables and reconcilers get
// the manager's context rather than the elector's, call it at the top of
// each reconcile; call cancel when the work is done.
func (l *Lock) WithTerm(parent context.Context) (context.Context, context.CancelFunc, error) {
	l.mu.Lock()
	lease, term, over := l.lease, l.term, l.over
	l.mu.Unlock()
	switch {
	case over != nil:
		return nil, nil, over
	case lease == nil:
		return nil, nil, ErrNotLeading
	}
	ctx, cancel := context.WithCancel(context.WithValue(parent, leaseKey{}, lease))
	stop := context.AfterFunc(term, cancel)
	return ctx, func() { stop(); cancel() }, nil
}

type leaseKey struct{}

// LeaseFrom returns the term's lease from a context WithTerm (or
// ElectionConfig's OnStartedLeading) gave: Fence() is the term, Grant()
// the grant, and client.Apply or client.Send write under it through a
// gate, which refuses the write once a newer term has written.
func LeaseFrom(ctx context.Context) (*client.Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(*client.Lease)
	return l, ok
}
