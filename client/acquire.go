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
// The session fills r: TTLMs 0 takes Options.TTLDefault (the client
// always names the TTL, so an acquire whose answer was lost is waited out
// for exactly that long), OperationID "" a fresh "op-…", OperationClass ""
// OperationClassDefault. RequestID is the session's: it draws one and
// keeps it until the registry gives a final answer; a request that sets
// one is refused (wire.ErrInvalid). WaitMs is how long to queue behind
// other holders (0: fail at once with BUSY).
//
// With r.Permits = N, r.Resource is a counting semaphore of N permits
// (wire.SlotResource): the Lease is one permit, a grant on one of its
// slots, with that slot's resource and fence (Grant().Resource names
// the slot, which is what its gate keys on); it renews, releases and
// expires as any lease. The session keeps it under the semaphore's name
// (Session.Lease(name)), one permit per semaphore and session at a time.
//
// With r.Mode = wire.ModeRead, r.Resource is a read/write lock and the
// Lease is a reader's: its grant names wire.ReadResource(r.Resource) and
// carries the last writer's fence (a gate refuses it for writes:
// READ_GRANT); it renews, releases and expires as any lease, its own
// alone. Kept, too, under the lock's name.
//
// After a lost answer the client asks for the grant by the same request
// ID (QueryRequest) and, if none exists yet, sends the same acquire again;
// it never switches IDs while the old attempt could still be granted. If
// ctx ends first, the session remembers the ID: a later Acquire with the
// same parameters reuses it, and one with other parameters gets
// *PendingError until TTL + Wait + AcquireMargin passed since the ID was
// last sent.
//
// A definite refusal (BUSY, WAIT_TIMEOUT, TTL_OUT_OF_RANGE, …) is final and
// returned wrapped; errors.Is against the registry sentinels works. Every
// decision is the acquire's core's (core.Acquire); this is its shell.
//
// Before anything is sent, a TTL shorter than the session's margins
// allow (TTLMin) and options no lease can work with (Options.Validate)
// are refused with a *SettingsError (ErrSettings; for the TTL also
// wire.ErrTTLOutOfRange) that names the range that works.
func (s *Session) Acquire(ctx context.Context, r wire.AcquireRequest) (*Lease, error) {
	return s.acquire(ctx, r, core.Begin{})
}

// acquire is Acquire, the core told how this call queues (Lock's
// LockChunk). The shell feeds the core and performs what it asks for:
// Next, the call, Step its answer, Next again, until Next hands over the
// grant or the error that ends the acquire.
func (s *Session) acquire(ctx context.Context, r wire.AcquireRequest, begin core.Begin) (*Lease, error) {
	a, err := s.begin(r, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	a.core.Step(s.o.Clock.Now(), begin)
	s.mu.Unlock()
	return s.drive(ctx, a)
}

// drive is the acquire's loop, a plain one's or a lock set's: it feeds
// the core and performs what it asks for until Next hands over the grant
// (the lease, started) or the error that ends the acquire.
func (s *Session) drive(ctx context.Context, a *attempt) (*Lease, error) {
	for {
		s.mu.Lock()
		rd := a.core.Next(s.o.Clock.Now())
		s.mu.Unlock()
		if rd.NeedsRequestID {
			s.mu.Lock()
			a.core.Step(s.o.Clock.Now(), core.NewRequest{RequestID: s.rnd.requestID()})
			s.mu.Unlock()
			continue
		}
		if rd.Call.Kind != core.CallNone {
			ans := timedCall(ctx, s.o.Clock, s.t, rd.Call, time.Time{}, nil)
			s.mu.Lock()
			out := a.core.Step(s.o.Clock.Now(), ans)
			s.mu.Unlock()
			s.notify(rd.Call.Request.RequestID, out)
			continue
		}
		switch {
		case rd.Granted != nil:
			return s.granted(a, *rd.Granted), nil
		case rd.Err != nil:
			s.finish(a, true)
			return nil, rd.Err
		case rd.Unreachable != nil:
			s.finish(a, false) // the request ID stays pending: it may still be granted
			return nil, rd.Unreachable
		}
		if err := s.sleepUntil(ctx, rd.Wake); err != nil {
			s.finish(a, false)
			s.mu.Lock()
			id := a.core.View().Request.RequestID
			s.mu.Unlock()
			return nil, fmt.Errorf("client: acquire %s: request %s has no final answer: %w", a.req.Resource, id, err)
		}
	}
}

// granted starts the lease the acquire's core handed over and forgets the
// request ID.
func (s *Session) granted(a *attempt, g core.Granted) *Lease {
	l := newLease(s, s.t, s.o, g)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, a.req.Resource)
	if a.set != nil {
		for _, h := range l.handles {
			s.live[h.grant.Resource] = h
		}
		return l
	}
	s.live[a.req.Resource] = l
	return l
}

// notify hands an acquire's transitions to OnTransition: under the
// request ID, and the last, REQUESTED → HELD, under the granted lease's
// name (leaseName), which its later transitions use.
func (s *Session) notify(requestID string, out core.AcquireReady) {
	if s.o.OnTransition == nil {
		return
	}
	for _, t := range out.Transitions {
		key := requestID
		if t.Event == core.EvAcquireOK && out.Granted != nil {
			key = leaseName(*out.Granted)
		}
		s.o.OnTransition(key, t.From, t.To, t.Event)
	}
}

// begin reserves the resource for one acquire: it reuses the pending
// request ID when the parameters match, and refuses while another attempt
// or a live lease exists. For a lock set, members are its (sorted,
// valid) resources and r its request as setParams made it: the attempt
// is kept under the set's name, and refused while any member has a live
// lease or an attempt of its own.
func (s *Session) begin(r wire.AcquireRequest, members []string) (*attempt, error) {
	if r.TTLMs == 0 {
		r.TTLMs = uint64(s.o.TTLDefault / time.Millisecond) // always explicit: a lost answer is waited out for exactly this
	}
	if r.OperationClass == "" {
		r.OperationClass = OperationClassDefault
	}
	if members == nil {
		if err := grant.ValidateResource(r.Resource); err != nil {
			return nil, fmt.Errorf("client: acquire: %w: %w", wire.ErrInvalid, err)
		}
	}
	if r.RequestID != "" {
		return nil, fmt.Errorf("client: acquire %s: %w: RequestID %q: the session draws and keeps request IDs; leave it empty", r.Resource, wire.ErrInvalid, r.RequestID)
	}
	if err := s.o.Validate(); err != nil {
		return nil, err
	}
	if err := s.o.Limits().CheckTTL(time.Duration(r.TTLMs) * time.Millisecond); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Clock.Now()
	if err := s.reservedLocked(r.Resource, members, now); err != nil {
		return nil, err
	}
	if a := s.pending[r.Resource]; a != nil {
		if r.OperationID == "" {
			r.OperationID = a.req.OperationID // left to the session: the pending acquire's
		}
		v := a.core.View()
		pe := &PendingError{Resource: r.Resource, RequestID: v.Request.RequestID, ReusableAt: v.ReusableAt}
		switch {
		case a.active:
			return nil, pe
		case sameParams(a.req, r):
			a.active = true // Begin lets it ask at once
			return a, nil
		case now.Before(pe.ReusableAt):
			return nil, pe
		}
		delete(s.pending, r.Resource) // presumed over: whatever it did has expired
	}
	if r.OperationID == "" {
		r.OperationID = "op-" + s.rnd.requestID()[len("req-"):]
	}
	r.RequestID = s.rnd.requestID()
	a := &attempt{req: r, set: members, active: true}
	if members != nil {
		a.core = core.NewSetAcquire(s.o.Limits(), wire.LockSetRequest{Members: members, OperationID: r.OperationID,
			OperationClass: r.OperationClass, RequestID: r.RequestID, TTLMs: r.TTLMs, WaitMs: r.WaitMs}, s.rnd.float64)
	} else {
		a.core = core.NewAcquire(s.o.Limits(), r, s.rnd.float64)
	}
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
// Options.LockWaitChunk (r.WaitMs is ignored), each asking again with the
// same request ID, so the waiter keeps the place in the FIFO queue where it
// joined, however long it waits. It returns the lease HELD, or the first
// error that is not a wait running out. When ctx has a deadline, the
// queueing ends Options.CallTimeout before it, so the registry's last
// answer arrives in time: WAIT_TIMEOUT, a *wire.BusyError naming who
// holds the resource. If ctx ends first (cancelled, or no answer in
// time), its error is returned wrapped and the request ID stays pending,
// as for Acquire.
func (s *Session) Lock(ctx context.Context, r wire.AcquireRequest) (*Lease, error) {
	r.WaitMs = uint64(s.o.LockWaitChunk / time.Millisecond)
	var until time.Time
	if dl, ok := ctx.Deadline(); ok {
		until = dl.Add(-s.o.CallTimeout)
	}
	l, err := s.acquire(ctx, r, core.Begin{LockChunk: s.o.LockWaitChunk, LockUntil: until})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("client: lock %s: %w", r.Resource, ctx.Err())
	}
	return l, err
}
