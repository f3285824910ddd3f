package client

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Acquire obtains a lease on r.Resource and returns it HELD.
//
// The request ID is kept until the registry gives a final answer: after a
// lost answer the client asks for the grant by the same request ID
// (QueryRequest) and, if none exists yet, sends the same acquire again; it
// never switches IDs while the old attempt could still be granted. If ctx
// ends first, the session remembers the ID: a later Acquire with the same
// parameters reuses it, and one with other parameters gets *PendingError
// until TTL + Wait + AcquireMargin passed since the ID was last sent.
//
// A definite refusal (BUSY, WAIT_TIMEOUT, TTL_OUT_OF_RANGE, …) is final and
// returned wrapped; errors.Is against the registry sentinels works. Every
// decision is the AcquireCore's; this is its driver.
//
// Before anything is sent, a TTL shorter than the session's margins
// allow (TTLMin) and options no lease can work with (Options.Validate)
// are refused with a *SettingsError (ErrSettings; for the TTL also
// wire.ErrTTLOutOfRange) that names the range that works.
func (s *Session) Acquire(ctx context.Context, r AcquireRequest) (*Lease, error) {
	return s.acquire(ctx, r, nil)
}

// acquire is Acquire, with mode (if not nil) applied to the acquire's core
// before each call of it (Lock's WaitAsLock).
func (s *Session) acquire(ctx context.Context, r AcquireRequest, mode func(*core.Acquire)) (*Lease, error) {
	a, err := s.begin(r)
	if err != nil {
		return nil, err
	}
	if mode != nil {
		s.mu.Lock()
		mode(a.core)
		s.mu.Unlock()
	}
	for {
		s.mu.Lock()
		call, wake := a.core.Next(s.o.Clock.Now())
		s.mu.Unlock()
		if call.Kind == core.CallNone {
			if done, is, err := a.core.Done(); done {
				return s.answered(a, is, err)
			}
			if err := a.core.Unreachable(); err != nil {
				s.finish(a, false) // the request ID stays pending: it may still be granted
				return nil, err
			}
			if err := s.sleepUntil(ctx, wake); err != nil {
				s.finish(a, false)
				return nil, fmt.Errorf("client: acquire %s: request %s has no final answer: %w", r.Resource, a.core.Request().RequestID, err)
			}
			continue
		}
		req := a.core.Request()
		is, err := timedCall(ctx, s.o.Clock, call.Timeout, time.Time{}, nil, func(c context.Context) (wire.Issued, error) {
			if call.Kind == core.CallQueryRequest {
				return s.t.QueryRequest(c, req.RequestID)
			}
			return s.t.Acquire(c, req)
		})
		s.mu.Lock()
		a.core.Answer(s.o.Clock.Now(), call, is, err)
		trans := a.core.Transitions()
		s.mu.Unlock()
		s.notify(req.RequestID, trans)
	}
}

// answered ends an Acquire on the core's final answer: the lease, or the
// error (and the request ID is forgotten either way).
func (s *Session) answered(a *attempt, is wire.Issued, err error) (*Lease, error) {
	if err != nil {
		s.finish(a, true)
		return nil, err
	}
	// The lease's TTL counts from an instant the registry's own start of
	// the lease cannot precede (AcquireCore.LeaseFrom): after a wait of any
	// length the lease is usable for its whole TTL.
	l := newLease(s, s.t, s.o, is, a.req.OperationID, a.core.LeaseFrom(s.o.Clock.Now()))
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, a.req.Resource)
	s.live[a.req.Resource] = l
	return l, nil
}

func (s *Session) notify(requestID string, trans []core.Transition) {
	if s.o.OnTransition == nil {
		return
	}
	for _, t := range trans {
		s.o.OnTransition(requestID, t.From, t.To, t.Event)
	}
}

// begin reserves the resource for one acquire: it reuses the pending
// request ID when the parameters match, and refuses while another attempt
// or a live lease exists.
func (s *Session) begin(r AcquireRequest) (*attempt, error) {
	if r.TTL == 0 {
		r.TTL = s.o.TTLDefault // always explicit: a lost answer is waited out for exactly this
	}
	if r.OperationClass == "" {
		r.OperationClass = OperationClassDefault
	}
	if err := grant.ValidateResource(r.Resource); err != nil {
		return nil, fmt.Errorf("client: acquire: %w: %w", wire.ErrInvalid, err)
	}
	if err := s.o.Validate(); err != nil {
		return nil, err
	}
	if err := s.o.Limits().CheckTTL(r.TTL); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.live[r.Resource]; l != nil {
		return nil, fmt.Errorf("%w: resource %s: lease %s", ErrAlreadyHeld, r.Resource, l.Grant().Lease)
	}
	now := s.o.Clock.Now()
	if a := s.pending[r.Resource]; a != nil {
		if r.OperationID == "" {
			r.OperationID = a.req.OperationID // left to the session: the pending acquire's
		}
		pe := &PendingError{Resource: r.Resource, RequestID: a.core.Request().RequestID, ReusableAt: a.core.ReusableAt()}
		switch {
		case a.active:
			return nil, pe
		case sameParams(a.req, r.wire("")):
			a.active = true
			a.core.Restart()
			return a, nil
		case now.Before(pe.ReusableAt):
			return nil, pe
		}
		delete(s.pending, r.Resource) // presumed over: whatever it did has expired
	}
	if r.OperationID == "" {
		r.OperationID = "op-" + s.newRequestIDLocked()[len("req-"):]
	}
	req := r.wire(s.newRequestIDLocked())
	a := &attempt{req: req, active: true, core: core.NewAcquire(s.o.Limits(), req, s.newRequestIDLocked, s.o.Rand.Float64)}
	s.pending[r.Resource] = a
	return a, nil
}

// finish ends an Acquire call; final forgets the request ID.
func (s *Session) finish(a *attempt, final bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.active = false
	if final && s.pending[a.req.Resource] == a {
		delete(s.pending, a.req.Resource)
	}
}

// sleepUntil waits until the clock reaches t (or ctx ends).
func (s *Session) sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.o.Clock.After(t.Sub(s.o.Clock.Now())):
		return nil
	}
}

// Lock acquires r.Resource, waiting for it as long as ctx allows — there
// is no cap of its own. It queues at the registry in long polls of at most
// Options.LockWaitChunk (r.Wait is ignored), each asking again with the
// same request ID, so the waiter keeps the place in the FIFO queue where it
// joined, however long it waits. It returns the lease HELD, or the first
// error that is not a wait running out. When ctx has a deadline, the
// queueing ends Options.CallTimeout before it, so the registry's last
// answer arrives in time: WAIT_TIMEOUT, a *wire.BusyError naming who
// holds the resource. If ctx ends first (cancelled, or no answer in
// time), its error is returned wrapped and the request ID stays pending,
// as for Acquire.
func (s *Session) Lock(ctx context.Context, r AcquireRequest) (*Lease, error) {
	r.Wait = s.o.LockWaitChunk
	var until time.Time
	if dl, ok := ctx.Deadline(); ok {
		until = dl.Add(-s.o.CallTimeout)
	}
	l, err := s.acquire(ctx, r, func(a *core.Acquire) { a.WaitAsLock(s.o.LockWaitChunk, until) })
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("client: lock %s: %w", r.Resource, ctx.Err())
	}
	return l, err
}
