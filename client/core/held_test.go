// This file proves a lease begun from a grant that is its own HELD
// statement (lockGrant.v1 heldUntil, no status in the acquire's answer):
// its envelopes carry no status and its drain ends at heldUntil; the
// refresh falls due ProofRefreshLead before heldUntil, and once answered
// the envelopes carry the status proof and the deadline is unchanged.
package core_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

func TestLeaseFromHeldGrant(t *testing.T) {
	o := client.Options{}.Limits()
	iss := gatetest.NewIssuer("client-held")
	iss.HeldFor = 2 * time.Second
	g, gp := iss.HeldGrant(gatetest.Writer{Resource: "r/held", Owner: "worker-a", Lease: "l-1", OperationID: "op-1", Fence: 3})
	t0 := g.IssuedAt
	l := core.NewLease(o, core.Granted{Issued: wire.Issued{Grant: g, GrantProof: gp, ExpiresAfterMs: int64(g.TTLMs)}, OperationID: "op-1", From: t0}, nil)
	env := l.Step(t0.Add(100*time.Millisecond), core.BuildEnvelope{Segment: 1, Payload: gatetest.Payload("a")})
	m, err := env.Envelope, env.Err
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Status) != 0 || m.StatusProof != "" {
		t.Fatalf("an envelope under a held-form grant carries a status: %q", m.Status)
	}
	if want := g.HeldUntil.Add(o.DrainMargin); !l.View().DrainUntil.Equal(want) {
		t.Fatalf("DrainUntil %s, want heldUntil + DrainMargin %s", l.View().DrainUntil, want)
	}
	deadline := l.View().Schedule.Deadline
	refreshAt := g.HeldUntil.Add(-o.ProofRefreshLead)
	if rd := l.Next(t0); rd.Call.Kind != core.CallNone || !rd.Wake.Equal(refreshAt) {
		t.Fatalf("next call %v at %s, want none until the refresh at %s", rd.Call.Kind, rd.Wake, refreshAt)
	}
	c := l.Next(refreshAt).Call
	if c.Kind != core.CallRefresh {
		t.Fatalf("at heldUntil − ProofRefreshLead: call %v, want a refresh", c.Kind)
	}
	st, sp := iss.Later(time.Second).Status(g, grant.StateHeld)
	l.Step(refreshAt.Add(10*time.Millisecond), core.Answer{Call: c, Issued: wire.Issued{Grant: g, GrantProof: gp, Status: st, StatusProof: sp}})
	env = l.Step(refreshAt.Add(20*time.Millisecond), core.BuildEnvelope{Segment: 2, Payload: gatetest.Payload("b")})
	m2, err := env.Envelope, env.Err
	if err != nil {
		t.Fatal(err)
	}
	if v := l.View(); len(m2.Status) == 0 || !v.Schedule.ProofUntil.Equal(st.ValidUntil) || !v.Schedule.Deadline.Equal(deadline) {
		t.Fatalf("after the refresh: status %q, proof until %s (want %s), deadline %s (want %s)",
			m2.Status, v.Schedule.ProofUntil, st.ValidUntil, v.Schedule.Deadline, deadline)
	}
}
