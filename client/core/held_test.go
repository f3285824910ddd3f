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
	l := core.NewLease(o, wire.Issued{Grant: g, GrantProof: gp, ExpiresAfterMs: int64(g.TTLMs)}, "op-1", t0, nil)
	m, err := l.Envelope(t0.Add(100*time.Millisecond), 1, gatetest.Payload("a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Status) != 0 || m.StatusProof != "" {
		t.Fatalf("an envelope under a held-form grant carries a status: %q", m.Status)
	}
	if want := g.HeldUntil.Add(o.DrainMargin); !l.DrainUntil().Equal(want) {
		t.Fatalf("DrainUntil %s, want heldUntil + DrainMargin %s", l.DrainUntil(), want)
	}
	deadline := l.Schedule().Deadline
	refreshAt := g.HeldUntil.Add(-o.ProofRefreshLead)
	if c, wake := l.Next(t0); c.Kind != core.CallNone || !wake.Equal(refreshAt) {
		t.Fatalf("next call %v at %s, want none until the refresh at %s", c.Kind, wake, refreshAt)
	}
	c, _ := l.Next(refreshAt)
	if c.Kind != core.CallRefresh {
		t.Fatalf("at heldUntil − ProofRefreshLead: call %v, want a refresh", c.Kind)
	}
	st, sp := iss.Later(time.Second).Status(g, grant.StateHeld)
	l.Answer(refreshAt.Add(10*time.Millisecond), c, wire.Issued{Grant: g, GrantProof: gp, Status: st, StatusProof: sp}, nil)
	m2, err := l.Envelope(refreshAt.Add(20*time.Millisecond), 2, gatetest.Payload("b"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Status) == 0 || !l.Schedule().ProofUntil.Equal(st.ValidUntil) || !l.Schedule().Deadline.Equal(deadline) {
		t.Fatalf("after the refresh: status %q, proof until %s (want %s), deadline %s (want %s)",
			m2.Status, l.Schedule().ProofUntil, st.ValidUntil, l.Schedule().Deadline, deadline)
	}
}
