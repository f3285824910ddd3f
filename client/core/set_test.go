// This file proves a lock set's cores: one lease for every member — a
// renewal is one call naming every member, the registry's definite word
// that any one member ended is the whole set's EXPIRED (the control: all
// HELD renews the set), an answer about another grant says nothing (the
// set goes OWNERSHIP_UNKNOWN, not HELD) — each member's envelopes carry
// its own grant and count its own segments; and the set's acquire resends
// the same set request, same request ID, after a lost answer, and takes
// the grants only when every member's is about its member under its
// member's request ID.
package core_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

var setMembers = []string{"accounts/alice", "accounts/bob"}

// setGrants issues the members' held-form grants under request id.
func setGrants(iss *gatetest.Issuer, id string) []wire.Issued {
	out := make([]wire.Issued, len(setMembers))
	for i, r := range setMembers {
		g, _ := iss.HeldGrant(gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "l-" + r[len("accounts/"):], OperationID: "op-1", Fence: uint64(3 + i)})
		g.RequestID = wire.MemberRequestID(id, i)
		gp, err := iss.Key.Sign(g)
		if err != nil {
			panic(err)
		}
		out[i] = wire.Issued{Grant: g, GrantProof: gp, ExpiresAfterMs: int64(g.TTLMs)}
	}
	return out
}

// statuses answers a set call: member i's status in states[i].
func statuses(iss *gatetest.Issuer, set []wire.Issued, states ...grant.State) []wire.Issued {
	out := make([]wire.Issued, len(set))
	for i, is := range set {
		st, sp := iss.Status(is.Grant, states[i])
		out[i] = wire.Issued{Grant: is.Grant, GrantProof: is.GrantProof, Status: st, StatusProof: sp}
	}
	return out
}

func TestSetLeaseIsOneLease(t *testing.T) {
	o := client.Options{}.Limits()
	iss := gatetest.NewIssuer("client-set")
	set := setGrants(iss, "req-1")
	t0 := set[0].Grant.IssuedAt
	newSet := func() *core.Lease {
		return core.NewLease(o, core.Granted{Issued: set[0], Set: set, OperationID: "op-1", From: t0}, nil)
	}
	renew := func(l *core.Lease) core.Call {
		at := l.View().Schedule.RenewAt
		c := l.Next(at).Call
		if c.Kind != core.CallRenew || len(c.Set) != 2 || c.Set[0] != set[0].Grant || c.Set[1] != set[1].Grant {
			t.Fatalf("at RenewAt: call %v naming %d members, want one renewal of both", c.Kind, len(c.Set))
		}
		return c
	}

	t.Run("every member HELD renews the set", func(t *testing.T) {
		l := newSet()
		c := renew(l)
		later := iss.Later(4 * time.Second)
		l.Step(c.Sent.Add(10*time.Millisecond), core.Answer{Call: c, Set: statuses(later, set, grant.StateHeld, grant.StateHeld)})
		if v := l.View(); v.State != core.StateHeld || !v.Schedule.Deadline.After(t0.Add(o.Life(10*time.Second))) {
			t.Fatalf("after both HELD: %s, deadline %s", v.State, v.Schedule.Deadline)
		}
	})
	t.Run("one member ended ends the set", func(t *testing.T) {
		l := newSet()
		c := renew(l)
		l.Step(c.Sent.Add(10*time.Millisecond), core.Answer{Call: c, Set: statuses(iss, set, grant.StateHeld, grant.StateExpired)})
		if s := l.View().State; s != core.StateExpired {
			t.Fatalf("member bob EXPIRED: the set is %s, want EXPIRED", s)
		}
		if rd := l.Step(c.Sent.Add(20*time.Millisecond), core.BuildEnvelope{Member: 0, Segment: 1, Payload: gatetest.Payload("a")}); !errors.Is(rd.Err, core.ErrNotCertain) {
			t.Fatalf("an envelope for the member still HELD at the registry after the set ended: %v", rd.Err)
		}
	})
	t.Run("a refusal ends the set", func(t *testing.T) {
		l := newSet()
		c := renew(l)
		l.Step(c.Sent.Add(10*time.Millisecond), core.Answer{Call: c, Err: wire.ErrLeaseExpired})
		if s := l.View().State; s != core.StateExpired {
			t.Fatalf("set renewal refused: %s, want EXPIRED", s)
		}
	})
	t.Run("an answer about another grant says nothing", func(t *testing.T) {
		l := newSet()
		c := renew(l)
		other := setGrants(iss, "req-2")
		ans := statuses(iss, set, grant.StateHeld, grant.StateHeld)
		ans[1].Status, ans[1].StatusProof = iss.Status(other[1].Grant, grant.StateHeld)
		l.Step(c.Sent.Add(10*time.Millisecond), core.Answer{Call: c, Set: ans})
		if s := l.View().State; s != core.StateUnknown {
			t.Fatalf("bob's answer about another grant: %s, want OWNERSHIP_UNKNOWN", s)
		}
	})
}

func TestSetLeaseEnvelopesPerMember(t *testing.T) {
	o := client.Options{}.Limits()
	iss := gatetest.NewIssuer("client-set")
	set := setGrants(iss, "req-1")
	t0 := set[0].Grant.IssuedAt
	l := core.NewLease(o, core.Granted{Issued: set[0], Set: set, OperationID: "op-1", From: t0}, nil)
	at := t0.Add(100 * time.Millisecond)
	for i, r := range setMembers {
		rd := l.Step(at, core.BuildEnvelope{Member: i, Segment: 1, Payload: gatetest.Payload(r)})
		if rd.Err != nil {
			t.Fatal(rd.Err)
		}
		if m := rd.Envelope; m.Resource != r || m.FenceToken != set[i].Grant.FenceToken || m.Lease != set[i].Grant.Lease || m.GrantProof != set[i].GrantProof {
			t.Fatalf("member %d's envelope: resource %s fence %d lease %s, want its own grant's", i, m.Resource, m.FenceToken, m.Lease)
		}
	}
	if n := l.View().Unsettled; n != 2 {
		t.Fatalf("segment 1 of each member: %d unsettled, want 2 (each member counts its own)", n)
	}
	l.Step(at, core.Settle{Member: 0, Segment: 1, Outcome: gate.Accepted})
	if n := l.View().Unsettled; n != 1 {
		t.Fatalf("alice's segment 1 settled: %d unsettled, want bob's still", n)
	}
	if rd := l.Step(at, core.BuildEnvelope{Member: 2, Segment: 1, Payload: gatetest.Payload("x")}); !errors.Is(rd.Err, core.ErrNoMember) {
		t.Fatalf("member 2 of a set of 2: %v, want ErrNoMember", rd.Err)
	}
}

func TestSetAcquireResendsSameRequest(t *testing.T) {
	o := client.Options{}.Limits()
	iss := gatetest.NewIssuer("client-set")
	t0 := iss.Now
	req := wire.LockSetRequest{Members: setMembers, OperationID: "op-1", OperationClass: "settle", RequestID: "req-1", TTLMs: 10_000}
	a := core.NewSetAcquire(o, req, func() float64 { return 0.5 })
	c := a.Next(t0).Call
	if c.Kind != core.CallAcquire || c.SetRequest == nil || c.SetRequest.RequestID != "req-1" || len(c.SetRequest.Members) != 2 {
		t.Fatalf("first call: %v %+v, want the set's acquire", c.Kind, c.SetRequest)
	}
	a.Step(t0.Add(time.Second), core.Lost{Call: c})
	rd := a.Next(t0.Add(time.Second))
	c2 := a.Next(rd.Wake).Call
	if c2.Kind != core.CallAcquire || c2.SetRequest == nil || c2.SetRequest.RequestID != "req-1" {
		t.Fatalf("after a lost answer: %v %+v, want the same set acquire again (no query by request ID)", c2.Kind, c2.SetRequest)
	}
	t.Run("a member under another request ID is a bad answer", func(t *testing.T) {
		b := core.NewSetAcquire(o, req, func() float64 { return 0.5 })
		c := b.Next(t0).Call
		bad := setGrants(iss, "req-other")
		if rd := b.Step(t0, core.Answer{Call: c, Issued: bad[0], Set: bad}); !errors.Is(rd.Err, core.ErrBadAnswer) {
			t.Fatalf("grants under another request: %v, want ErrBadAnswer", rd.Err)
		}
	})
	t.Run("a member that ended asks for a fresh request ID", func(t *testing.T) {
		b := core.NewSetAcquire(o, req, func() float64 { return 0.5 })
		c := b.Next(t0).Call
		ended := statuses(iss, setGrants(iss, "req-1"), grant.StateHeld, grant.StateReleased)
		if rd := b.Step(t0, core.Answer{Call: c, Issued: ended[0], Set: ended}); !rd.NeedsRequestID || rd.Granted != nil {
			t.Fatalf("bob's grant RELEASED: needs ID %v, granted %v; want a fresh request, nothing held", rd.NeedsRequestID, rd.Granted != nil)
		}
	})
	set := setGrants(iss, "req-1")
	rd = a.Step(t0.Add(2*time.Second), core.Answer{Call: c2, Issued: set[0], Set: set})
	if rd.Granted == nil || len(rd.Granted.Set) != 2 {
		t.Fatalf("every member granted: %+v %v, want the set handed over", rd.Granted, rd.Err)
	}
}
