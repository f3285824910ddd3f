package client

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/registry"
)

// Release gives the lease up. Ownership stops being certain before the
// request is sent: Ctx() is cancelled and envelopes are refused at once.
// A lost answer is retried (release is idempotent at the registry) until
// the registry answers or ctx ends; after ctx ends the lease keeps trying
// in the background (OWNERSHIP_UNKNOWN) unless Options.Manual.
//
// Releasing the lock is not completing the business: a write sent before
// Release whose answer was lost is still MUTATION_UNKNOWN (see Resolver).
//
// A lease the registry already considers ended goes to EXPIRED and Release
// returns nil: either way nothing is held any more.
func (l *Lease) Release(ctx context.Context) error {
	l.opMu.Lock()
	defer l.opMu.Unlock()
	l.mu.Lock()
	if st := l.m.state; st.Terminal() {
		l.mu.Unlock()
		return nil
	}
	l.releasing = true
	l.cancel() // no new effects from here on, whatever the answer
	l.mu.Unlock()
	for {
		done, err := l.releaseOnce(ctx)
		if done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("client: release %s: %w (last: %w)", l.issued.Grant.Lease, ctx.Err(), err)
		case <-l.o.Clock.After(l.o.QueryInterval):
		}
	}
}

// releaseOnce sends one release and steps the machine on its answer. done
// reports a final answer.
func (l *Lease) releaseOnce(ctx context.Context) (done bool, err error) {
	g := l.issued.Grant
	_, err, _ = l.call(ctx, func(c context.Context) (registry.Issued, error) {
		return registry.Issued{}, l.t.Release(c, g.Resource, g.Lease)
	})
	l.mu.Lock()
	var notify func()
	switch classify(err) {
	case answerOK: // even late: a release cannot be undone
		notify, done, err = l.stepLocked(EvReleaseOK), true, nil
	case answerRefused:
		notify, done, err = l.stepLocked(EvReleaseRefused), true, nil
	default:
		notify = l.stepLocked(EvReleaseLost)
		l.sched.QueryAt = l.o.Clock.Now().Add(l.o.QueryInterval)
		err = fmt.Errorf("client: release %s: %w", g.Lease, err)
	}
	l.mu.Unlock()
	notify()
	return done, err
}
