package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// breakTriesMax bounds how many times a break looks again when what holds
// the named resource changed between its reads (a lock set's lease seen,
// then gone when the set's write was decided): a few, since each look is
// a fresh linearizable read and the changes are real handovers.
const breakTriesMax = 4

// errBreakSet is the one-record break's way to say the resource's live
// holder is a lock set's member: the break goes to the whole set.
var errBreakSet = errors.New("registry: break: a lock set's member")

// Break ends resource's current lease now, whoever holds it, and hands the
// resource to the next waiter in the same write (lockstate's breaks.go):
// an operator's way out of a lock held by a stuck process. It is safe
// here and nowhere else because the next grant's fence is higher, so the
// old holder's late writes are refused at every gate once the next holder
// has written. The old holder's renewals answer ErrLeaseBroken.
//
// What it ends, by what resource names: a lock's holder; a read/write
// lock NAME's writer, or every reader when readers hold; NAME/_read,
// every reader's share and never a writer; a semaphore's slot
// (NAME/_slot.i), that permit, whose slot the semaphore's queue head then
// takes; a lock set's member, the whole set — every member's lease in one
// write (Store, "Lock sets"), each member handed on. A semaphore's own
// name holds no lease and is refused (ErrInvalid): name a slot. It
// returns the leases ended (Ended; Broken is the named resource's) and
// the lock after; nothing ended when the resource was free.
func (r *Registry) Break(ctx context.Context, resource string) (wire.BreakResponse, error) {
	return r.BreakAllowed(ctx, resource, nil)
}

// BreakAllowed is Break, asking allow first, before anything is written,
// whether the caller may end the leases a lock set's break would end on
// the set's other members (others, sorted); an error from allow is
// returned and nothing is ended. The set broken is then the one allow was
// asked about: if the named member's lease changed hands meanwhile, Break
// looks again and asks again. allow nil allows everything.
func (r *Registry) BreakAllowed(ctx context.Context, resource string, allow func(ctx context.Context, others []string) error) (wire.BreakResponse, error) {
	if err := grant.ValidateResource(resource); err != nil {
		return wire.BreakResponse{}, fmt.Errorf("%w: resource: %v", wire.ErrInvalid, err)
	}
	for range breakTriesMax {
		out, set, err := r.breakOne(ctx, resource)
		if !errors.Is(err, errBreakSet) {
			return out, err
		}
		if allow != nil {
			others := slices.DeleteFunc(slices.Clone(set.members), func(m string) bool { return m == resource })
			if err := allow(ctx, others); err != nil {
				return wire.BreakResponse{}, err
			}
		}
		out, err = r.breakSet(ctx, resource, set)
		if !errors.Is(err, wire.ErrNotHolder) {
			return out, err
		}
	}
	return wire.BreakResponse{}, fmt.Errorf("%w: break %s: its holder changed %d times while it was broken", wire.ErrConflict, resource, breakTriesMax)
}

// heldSet is a lock set as a break found it.
type heldSet struct {
	members          []string
	owner, requestID string
}

// breakOne breaks a one-record lock, a semaphore's slot, a read/write
// lock or its readers. When resource's live holder is a lock set's member
// it writes nothing and returns errBreakSet with the set (unless resource
// names the readers: a set's lease is a writer's, which a readers' break
// leaves alone).
func (r *Registry) breakOne(ctx context.Context, resource string) (wire.BreakResponse, heldSet, error) {
	name, readers := wire.ReadOf(resource)
	if !readers {
		name = resource
	}
	var (
		out wire.BreakResponse
		set heldSet
	)
	s, rev, err := r.casLoop(ctx, name, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		rec := recordOf(s)
		if rec.Permits > 0 {
			return nil, fmt.Errorf("%w: %s is a semaphore of %d permits, which holds no lease itself: break one slot (%s …)", wire.ErrInvalid, name, rec.Permits, wire.SlotResource(name, 0))
		}
		if m, owner, id, ok := lockstate.SetOf(rec, name, s.Settings, now, r.lim); ok && !readers {
			set = heldSet{members: m, owner: owner, requestID: id}
			return nil, errBreakSet
		}
		decide := lockstate.DecideBreak
		if readers {
			decide = lockstate.DecideBreakReaders
		}
		dec, ended := decide(rec, s.Settings, now, r.lim, takenKeys(s))
		out.Ended = nil
		for i := range ended {
			out.Ended = append(out.Ended, wire.BrokenLease{Resource: ended[i].Grant.Resource, Holder: *lockstate.HolderView(&ended[i])})
		}
		return r.writeFor(s, dec.Record, dec.Entries), nil
	})
	if err != nil {
		return wire.BreakResponse{}, set, err
	}
	if len(out.Ended) > 0 {
		out.Broken = &out.Ended[0].Holder
	}
	if rev == 0 { // nothing written: the resource was free
		out.Status = r.viewOf(&s)
		return out, set, nil
	}
	out.Status, err = r.LockStatus(ctx, name)
	return out, set, err
}

// breakSet ends every member's lease of the lock set set, of which
// resource is a member, in one set write (lockstate.DecideSetBreak). It
// fails with wire.ErrNotHolder, writing nothing, when resource no longer
// holds the set's lease.
func (r *Registry) breakSet(ctx context.Context, resource string, set heldSet) (wire.BreakResponse, error) {
	named := slices.Index(set.members, resource)
	var out wire.BreakResponse
	_, _, err := r.setCasLoop(ctx, set.members, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		dec, ended, err := lockstate.DecideSetBreak(memberRecords(s), set.members, named, s.Settings, set.owner, set.requestID, now, r.lim, takenKeys(s))
		if err != nil {
			return nil, err
		}
		out.Ended = nil
		for i, h := range ended {
			if h != nil {
				out.Ended = append(out.Ended, wire.BrokenLease{Resource: set.members[i], Holder: *lockstate.HolderView(h)})
			}
		}
		return r.setWriteFor(s, dec.Records, dec.Entries), nil
	})
	if err != nil {
		return wire.BreakResponse{}, err
	}
	for i := range out.Ended {
		if out.Ended[i].Resource == resource {
			out.Broken = &out.Ended[i].Holder
		}
	}
	out.Status, err = r.LockStatus(ctx, resource)
	return out, err
}
