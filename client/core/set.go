package core

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// A lock set (wire.LockSetRequest) is held as ONE lease: one Machine, one
// Schedule, one call in flight, whatever the number of members. Its
// members share the TTL and the issue instant, so they share the local
// deadline; a renewal renews every member in one registry transaction
// (Call.Set, answered with every member's status), so the set is renewed
// whole or not at all; and the registry's definite word that any one
// member is not HELD is the whole set's EXPIRED (judgeSet): the client
// never keeps a part of a set. Each member keeps its own grant, proof and
// status, for envelopes to its own gate (BuildEnvelope.Member).
//
// A set's acquire is the plain acquire's core with one difference: after
// a lost answer it sends the same set request again (same request ID)
// instead of asking by request ID, because the registry answers a
// retried set request from its members' entries: the same grants while
// they live, their final states after.

// ErrNoMember: an envelope, settle or lookup named a member the lease
// does not have.
var ErrNoMember = errors.New("client: no such member")

// reply is a call's answer as the cores read it: one grant's, or a
// set's, every member's in member order.
type reply struct {
	one wire.Issued
	set []wire.Issued
}

// segment names one envelope: a member's segment (member 0 for a plain
// lease).
type segment struct {
	member int
	seq    uint64
}

// SetName is how a set is named in messages: its members, sorted, in
// braces ("{a,b}"). It is not a resource.
func SetName(members []string) string { return "{" + strings.Join(members, ",") + "}" }

// NewSetAcquire returns the core of a lock set's acquire, req's Members
// sorted and valid (wire.ValidateLockSet) and its RequestID set. Its
// AcquireView.Request carries the set's request ID, TTL and wait, and
// SetName as its Resource; its Granted hands over every member (Set).
func NewSetAcquire(o Limits, req wire.LockSetRequest, jitter func() float64) *Acquire {
	r := wire.AcquireRequest{Resource: SetName(req.Members), OperationID: req.OperationID, OperationClass: req.OperationClass,
		RequestID: req.RequestID, TTLMs: req.TTLMs, WaitMs: req.WaitMs}
	a := NewAcquire(o, r, jitter)
	a.set = &req
	return a
}

// setRequest is the set request to send now: the current request ID and
// wait. Nil for a plain acquire.
func (a *Acquire) setRequest() *wire.LockSetRequest {
	if a.set == nil {
		return nil
	}
	r := *a.set
	r.Members = append([]string(nil), a.set.Members...)
	r.RequestID, r.WaitMs = a.req.RequestID, a.req.WaitMs
	return &r
}

// answeredSet reads a set's grants returned for the request ID, as
// answered reads one: every member's grant must be about its member,
// under its member's request ID (wire.MemberRequestID), with HELD
// evidence. All HELD ends the acquire. A member's grant that already
// ended makes the whole answer final for that ID (a fresh one comes
// next): a set is never taken in part.
func (a *Acquire) answeredSet(now time.Time, set []wire.Issued) {
	if err := a.checkSet(set); err != nil {
		a.finish(wire.Issued{}, err)
		return
	}
	for _, is := range set {
		if is.Status != nil && is.Status.State != grant.StateHeld {
			a.needID, a.firstSent = true, time.Time{}
			a.lost, a.backoff, a.retryAt = false, AcquireBackoffMin, now
			return
		}
	}
	a.issuedSet = set
	a.finish(set[0], nil)
}

// checkSet refuses a set answer that is not about this request.
func (a *Acquire) checkSet(set []wire.Issued) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: acquire %s: "+format, append([]any{ErrBadAnswer, a.req.Resource}, args...)...)
	}
	if len(set) != len(a.set.Members) {
		return bad("%d members answered, not %d", len(set), len(a.set.Members))
	}
	for i, is := range set {
		g := is.Grant
		switch {
		case g == nil || g.Resource != a.set.Members[i] || g.RequestID != wire.MemberRequestID(a.req.RequestID, i):
			return bad("member %d is not about %s under request %s", i, a.set.Members[i], a.req.RequestID)
		case is.Status == nil && !g.HeldStatement() || is.Status != nil && is.Status.Grant != g.Digest():
			return bad("member %s: no statement about its grant", g.Resource)
		}
	}
	return nil
}

// member is the lease's member i (a plain lease has only 0).
func (c *Lease) member(i int) (wire.Issued, bool) {
	switch {
	case c.set == nil && i == 0:
		return c.issued, true
	case i >= 0 && i < len(c.set):
		return c.set[i], true
	}
	return wire.Issued{}, false
}

// setGrants is a set's grants, in member order (nil for a plain lease).
func (c *Lease) setGrants() []*grant.Grant {
	if c.set == nil {
		return nil
	}
	gs := make([]*grant.Grant, len(c.set))
	for i, is := range c.set {
		gs[i] = is.Grant
	}
	return gs
}

// judgeSet reads a set's answer as judge reads one grant's: held when
// every member is HELD; refused when any member is definitely not (the
// set ends whole); otherwise (a member missing, or about another grant)
// the answer says nothing.
func (c *Lease) judgeSet(set []wire.Issued) (held, refused bool) {
	if len(set) != len(c.set) {
		return false, false
	}
	held = true
	for i, is := range set {
		h, r := judgeOne(c.set[i].Grant, is)
		if r {
			return false, true
		}
		held = held && h
	}
	return held, false
}

// evidenceUntil is how long the lease's HELD evidence lasts (registry
// clock): a set's is its first member's to lapse.
func (c *Lease) evidenceUntil() time.Time {
	if c.set == nil {
		return evidenceUntil(c.issued)
	}
	until := evidenceUntil(c.set[0])
	for _, is := range c.set[1:] {
		if u := evidenceUntil(is); u.Before(until) {
			until = u
		}
	}
	return until
}

// Leftovers is what a lock set that ended EXPIRED may still hold at the
// registry, and from when the client may give it up. The registry ends a
// set's renewal when any one member ended and renews none, but the other
// members' leases run on to their TTL, keeping those resources from the
// next holder. The client stopped at EXPIRED; releasing those members
// (one ordinary release each: a member's grant is an ordinary grant)
// frees them early, but only once no unsettled envelope of the set can
// still be accepted: at DrainUntil, as a drained release waits (zero:
// at once). A member that already ended answers the release with a
// refusal, which is as good. Nil for a plain lease, or a set that did not
// end EXPIRED.
func (v LeaseView) Leftovers() (members []*grant.Grant, at time.Time) {
	if v.Set == nil || v.State != StateExpired {
		return nil, time.Time{}
	}
	for _, is := range v.Set {
		members = append(members, is.Grant)
	}
	return members, v.DrainUntil
}
