package client

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
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
// returned wrapped; errors.Is against the registry sentinels works.
func (s *Session) Acquire(ctx context.Context, r AcquireRequest) (*Lease, error) {
	a, err := s.begin(r)
	if err != nil {
		return nil, err
	}
	backoff, lost := AcquireBackoffMin, false
	for {
		var is registry.Issued
		var err error
		if lost {
			is, err, _ = timedCall(ctx, s.o.Clock, s.o.CallTimeout, func(c context.Context) (registry.Issued, error) {
				return s.t.QueryRequest(c, a.req.RequestID)
			})
			if registry.CodeOf(err) == "NOT_FOUND" { // not granted (yet): send the same acquire again
				lost, backoff = false, AcquireBackoffMin
				continue
			}
		} else {
			s.sent(a)
			wait := time.Duration(a.req.WaitMs) * time.Millisecond
			is, err, _ = timedCall(ctx, s.o.Clock, s.o.CallTimeout+wait, func(c context.Context) (registry.Issued, error) {
				return s.t.Acquire(c, a.req)
			})
		}
		switch classify(err) {
		case answerOK:
			l, again, err := s.answered(a, is)
			if !again {
				return l, err
			}
			lost, backoff = false, AcquireBackoffMin
			continue
		case answerRefused:
			s.finish(a, true)
			return nil, fmt.Errorf("client: acquire %s: %w", r.Resource, err)
		case answerLost:
			lost = true
			s.stepRequested(a, EvAcquireLost)
		}
		if err := s.sleep(ctx, &backoff); err != nil {
			s.finish(a, false)
			return nil, fmt.Errorf("client: acquire %s: request %s has no final answer: %w", r.Resource, a.req.RequestID, err)
		}
	}
}

// answered handles a grant returned for a's request ID. A HELD grant
// becomes the lease. A grant that already ended (the answer was lost long
// ago) is a final answer for that ID: a fresh ID is drawn and again is true.
func (s *Session) answered(a *attempt, is registry.Issued) (l *Lease, again bool, err error) {
	if is.Grant == nil || is.Status == nil || is.Grant.RequestID != a.req.RequestID || is.Status.Grant != is.Grant.Digest() {
		s.finish(a, false)
		return nil, false, fmt.Errorf("%w: acquire %s: answer is not about request %s", ErrBadAnswer, a.req.Resource, a.req.RequestID)
	}
	if is.Status.State != grant.StateHeld {
		s.mu.Lock()
		a.req.RequestID, a.firstSent = s.newRequestIDLocked(), time.Time{}
		s.mu.Unlock()
		return nil, true, nil
	}
	// The registry may have granted at any instant since the ID was first
	// sent; count the TTL from then (a too-early deadline is corrected by
	// the first renewal).
	l = newLease(s, s.t, s.o, is, a.req.OperationID, a.firstSent)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, a.req.Resource)
	s.live[a.req.Resource] = l
	return l, false, nil
}

// begin reserves the resource for one acquire: it reuses the pending
// request ID when the parameters match, and refuses while another attempt
// or a live lease exists.
func (s *Session) begin(r AcquireRequest) (*attempt, error) {
	if r.TTL == 0 {
		r.TTL = s.o.TTLDefault // always explicit: a lost answer is waited out for exactly this
	}
	if err := grant.ValidateResource(r.Resource); err != nil {
		return nil, fmt.Errorf("client: acquire: %w: %w", registry.ErrInvalid, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.live[r.Resource]; l != nil {
		return nil, fmt.Errorf("%w: resource %s: lease %s", ErrAlreadyHeld, r.Resource, l.issued.Grant.Lease)
	}
	now := s.o.Clock.Now()
	if a := s.pending[r.Resource]; a != nil {
		pe := &PendingError{Resource: r.Resource, RequestID: a.req.RequestID, ReusableAt: a.reusableAt(s.o)}
		switch {
		case a.active:
			return nil, pe
		case sameParams(a.req, r.wire("")):
			a.active = true
			return a, nil
		case now.Before(pe.ReusableAt):
			return nil, pe
		}
		delete(s.pending, r.Resource) // presumed over: whatever it did has expired
	}
	a := &attempt{req: r.wire(s.newRequestIDLocked()), ttl: r.TTL, active: true, m: NewMachine()}
	s.pending[r.Resource] = a
	return a, nil
}

// sent records that a's acquire is about to be sent.
func (s *Session) sent(a *attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Clock.Now()
	if a.firstSent.IsZero() {
		a.firstSent = now
	}
	a.lastSent = now
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

// stepRequested runs the REQUESTED part of the machine for an attempt.
func (s *Session) stepRequested(a *attempt, ev Event) {
	s.mu.Lock()
	from := a.m.state
	to, _ := a.m.Step(ev)
	s.mu.Unlock()
	if s.o.OnTransition != nil {
		s.o.OnTransition(a.req.RequestID, from, to, ev)
	}
}

// sleep waits out the backoff (with seeded jitter) and doubles it.
func (s *Session) sleep(ctx context.Context, backoff *time.Duration) error {
	d := time.Duration(float64(*backoff) * (0.5 + s.float64()))
	*backoff = min(*backoff*2, AcquireBackoffMax)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.o.Clock.After(d):
		return nil
	}
}
