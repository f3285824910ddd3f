package client

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// SetTransport carries a lock set's calls (Session.LockSet,
// Session.AcquireSet), the registry's /v1/lockset/ routes, with
// Transport's contract for errors: *httpclient.Client implements it.
// Each answer names every member, in the set's (sorted) member order.
type SetTransport interface {
	// AcquireSet takes every member of req at once or none (waiting up
	// to req.WaitMs holding none); a retry with the same RequestID
	// answers the same grants.
	AcquireSet(ctx context.Context, req wire.LockSetRequest) (wire.IssuedSet, error)
	// RenewSet renews every member's lease in one registry transaction,
	// or none: a member whose lease ended makes it a definite refusal.
	RenewSet(ctx context.Context, leases []wire.LeaseRequest) (wire.IssuedSet, error)
	// ReleaseSet releases every member's lease in one transaction.
	ReleaseSet(ctx context.Context, leases []wire.LeaseRequest) error
}

// LockSet is a held lock set: every member's grant, held as ONE lease —
// one state machine, one renewal loop renewing every member in one
// registry transaction, one local deadline (the members share TTL and
// issue instant), one ownership context. The moment any member stops
// being certain (its renewal lost, the registry's word that it ended: a
// break, an expiry), the whole set is: Ctx() is cancelled, every member's
// envelopes are refused. The client never keeps part of a set.
//
// Each member keeps its own grant and fence for its own gate: Lease
// (member) is that member's handle (a *Lease whose Grant, Fence,
// Envelope, Settle, Apply and Send are the member's; its Ctx, State,
// Deadline, Done and Release are the set's). A gate checks only its own
// resource's grant; it knows nothing of the set.
type LockSet struct {
	l         *Lease // member 0's handle; every handle shares its shell
	requestID string
}

// Members returns the set's resources, sorted (its member order).
func (ls *LockSet) Members() []string {
	rs := make([]string, len(ls.l.handles))
	for i, h := range ls.l.handles {
		rs[i] = h.grant.Resource
	}
	return rs
}

// Lease returns member's handle: its grant and fence, its envelopes.
func (ls *LockSet) Lease(member string) (*Lease, bool) {
	for _, h := range ls.l.handles {
		if h.grant.Resource == member {
			return h, true
		}
	}
	return nil, false
}

// Leases returns every member's handle, in member order.
func (ls *LockSet) Leases() []*Lease { return slices.Clone(ls.l.handles) }

// RequestID is the set's request ID (each member's grant carries
// wire.MemberRequestID of it).
func (ls *LockSet) RequestID() string { return ls.requestID }

// OperationID is the operation every member's root binds.
func (ls *LockSet) OperationID() string { return ls.l.op }

// Ctx is the set's ownership context (Lease.Ctx): cancelled the instant
// ownership of any member stops being certain.
func (ls *LockSet) Ctx() context.Context { return ls.l.Ctx() }

// State is the set's local state (Lease.State): one machine for all.
func (ls *LockSet) State() LeaseState { return ls.l.State() }

// Deadline is the set's local deadline (Lease.Deadline).
func (ls *LockSet) Deadline() time.Time { return ls.l.Deadline() }

// Done is closed when the set ends: EXPIRED or RELEASED.
func (ls *LockSet) Done() <-chan struct{} { return ls.l.Done() }

// Unsettled is how many envelopes of any member await a final answer.
func (ls *LockSet) Unsettled() int { return ls.l.Unsettled() }

// Tick is Lease.Tick for the set (Options.Manual).
func (ls *LockSet) Tick(ctx context.Context) LeaseState { return ls.l.Tick(ctx) }

// Release gives every member up in one registry call, after the drain
// (Lease.Release): ownership of the whole set stops being certain at
// once. Any member's handle's Release does the same.
func (ls *LockSet) Release(ctx context.Context) error { return ls.l.Release(ctx) }

// LockSet acquires every member of req at once, waiting as long as ctx
// allows, as Lock does for one resource: it queues in long polls of at
// most Options.LockWaitChunk with the same request ID, holding nothing
// while it waits (the registry queues the set in every member's queue),
// and returns the set HELD. req.Members may come in any order (the
// session sorts them); req.WaitMs is ignored; the other fields are
// filled as Acquire fills them. Whatever order callers name members in,
// two sets never deadlock: the registry grants a set whole, never in
// part.
func (s *Session) LockSet(ctx context.Context, req wire.LockSetRequest) (*LockSet, error) {
	req.WaitMs = uint64(s.o.LockWaitChunk / time.Millisecond)
	var until time.Time
	if dl, ok := ctx.Deadline(); ok {
		until = dl.Add(-s.o.CallTimeout)
	}
	ls, err := s.acquireSet(ctx, req, core.Begin{LockChunk: s.o.LockWaitChunk, LockUntil: until})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("client: lock set: %w", ctx.Err())
	}
	return ls, err
}

// AcquireSet is LockSet with req.WaitMs as given, as Acquire: 0 answers
// at once (BUSY naming the first busy member when any is held).
func (s *Session) AcquireSet(ctx context.Context, req wire.LockSetRequest) (*LockSet, error) {
	return s.acquireSet(ctx, req, core.Begin{})
}

// acquireSet drives a set's acquire core (core.NewSetAcquire) as
// acquire drives a plain one: one request ID, kept until a final
// answer, resent as it is after a lost answer.
func (s *Session) acquireSet(ctx context.Context, req wire.LockSetRequest, begin core.Begin) (*LockSet, error) {
	if _, ok := s.t.(SetTransport); !ok {
		return nil, fmt.Errorf("client: lock set: %w: transport %T carries no lock sets", ErrRefused, s.t)
	}
	r, members, err := s.setParams(req)
	if err != nil {
		return nil, err
	}
	a, err := s.begin(r, members)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	a.core.Step(s.o.Clock.Now(), begin)
	s.mu.Unlock()
	l, err := s.drive(ctx, a)
	if err != nil {
		return nil, err
	}
	return &LockSet{l: l, requestID: l.grant.RequestID[len(wire.MemberRequestID("", 0)):]}, nil
}

// reservedLocked refuses an acquire of resource (a set's: its name, and
// members) while the session holds a live lease on it or on any member,
// or an attempt of a set has one of them among its members (a plain
// attempt on a member is refused by begin, under its own name). Under
// s.mu.
func (s *Session) reservedLocked(resource string, members []string, now time.Time) error {
	for _, r := range append([]string{resource}, members...) {
		if l := s.live[r]; l != nil {
			return fmt.Errorf("%w: resource %s: lease %s", ErrAlreadyHeld, r, l.Grant().Lease)
		}
		if members != nil && r != resource {
			if pe := s.stillPendingLocked(r, now); pe != nil {
				return pe
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.pending)) {
		if a := s.pending[name]; a.set == nil || name == resource || !overlaps(a.set, resource, members) {
			continue
		}
		if pe := s.stillPendingLocked(name, now); pe != nil {
			return pe
		}
	}
	return nil
}

// stillPendingLocked is the *PendingError of the attempt kept under
// name, or nil when there is none or it is presumed over (then it is
// forgotten: whatever it did has expired). Under s.mu.
func (s *Session) stillPendingLocked(name string, now time.Time) *PendingError {
	a := s.pending[name]
	if a == nil {
		return nil
	}
	if v := a.core.View(); a.active || now.Before(v.ReusableAt) {
		return &PendingError{Resource: name, RequestID: v.Request.RequestID, ReusableAt: v.ReusableAt}
	}
	delete(s.pending, name)
	return nil
}

// overlaps reports whether set shares a resource with resource or
// members.
func overlaps(set []string, resource string, members []string) bool {
	for _, r := range set {
		if r == resource || slices.Contains(members, r) {
			return true
		}
	}
	return false
}

// setParams checks a set request and names it as begin keeps it: the
// request under the set's name (core.SetName), and the members, sorted.
func (s *Session) setParams(req wire.LockSetRequest) (wire.AcquireRequest, []string, error) {
	members := slices.Sorted(slices.Values(req.Members))
	if err := wire.ValidateLockSet(members); err != nil {
		return wire.AcquireRequest{}, nil, fmt.Errorf("client: lock set: %w", err)
	}
	if req.RequestID != "" {
		return wire.AcquireRequest{}, nil, fmt.Errorf("client: lock set %s: %w: RequestID %q: the session draws and keeps request IDs; leave it empty",
			core.SetName(members), wire.ErrInvalid, req.RequestID)
	}
	return wire.AcquireRequest{Resource: core.SetName(members), OperationID: req.OperationID,
		OperationClass: req.OperationClass, TTLMs: req.TTLMs, WaitMs: req.WaitMs}, members, nil
}

// setPerform makes a lock set's call (perform): the set's acquire,
// renewal and release are one registry call each; its status refresh is
// one status query per member, answered together (the first error is
// the answer's).
func setPerform(ctx context.Context, t Transport, call core.Call) core.Answer {
	a := core.Answer{Call: call}
	st, ok := t.(SetTransport)
	if !ok {
		a.Err = fmt.Errorf("client: lock set: %w: transport %T carries no lock sets", ErrRefused, t)
		return a
	}
	var is wire.IssuedSet
	switch {
	case call.SetRequest != nil:
		is, a.Err = st.AcquireSet(ctx, *call.SetRequest)
	case call.Kind == core.CallRefresh:
		for _, g := range call.Set {
			one, err := t.Status(ctx, g)
			if err != nil {
				return core.Answer{Call: call, Err: err}
			}
			is.Members = append(is.Members, one)
		}
	case call.Kind == core.CallRelease:
		a.Err = st.ReleaseSet(ctx, leaseRequests(call.Set))
	default: // CallRenew, CallQuery
		is, a.Err = st.RenewSet(ctx, leaseRequests(call.Set))
	}
	if a.Err == nil && len(is.Members) > 0 {
		a.Set, a.Issued = is.Members, is.Members[0]
	}
	return a
}

// leaseRequests names each member's lease, in member order.
func leaseRequests(gs []*grant.Grant) []wire.LeaseRequest {
	ls := make([]wire.LeaseRequest, len(gs))
	for i, g := range gs {
		ls[i] = wire.LeaseRequest{Resource: g.Resource, Lease: g.Lease}
	}
	return ls
}
