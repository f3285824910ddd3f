// Proves Replace puts a decision in place of gate.Decide for the policy
// it returns and for no other: an adapter built on the returned copy
// decides with the replacement, one built on the original still with
// Decide.
package gatebreak_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatebreak"
	"github.com/fencegate/fencegate/gate/memgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestReplaceDecidesInsteadOfDecide(t *testing.T) {
	iss := gatetest.NewIssuer("break")
	p := gate.Policy{Verifier: iss.Verifier}
	calls := 0
	refuseAll := func(in gate.Input) gate.Decision {
		calls++
		d := gate.Decide(in)
		if d.Outcome == gate.Accepted {
			d = gate.Decision{Outcome: gate.NotHeld, State: in.State, Err: &gate.Rejection{Outcome: gate.NotHeld, Reason: "the replacement"}}
		}
		return d
	}
	broken := gatebreak.Replace(p, refuseAll)
	w := gatetest.Writer{Resource: "break/one", Owner: "worker-a", Lease: "lease-a", OperationID: "op-a", Fence: 1}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		pol  gate.Policy
		want gate.Outcome
	}{{"replaced", broken, gate.NotHeld}, {"original", p, gate.Accepted}} {
		g, err := memgate.New(memgate.Config{Policy: c.pol, Clock: fakeclock.New(iss.Now.Add(time.Second))})
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Apply(ctx, w.Owner, iss.Mutation(w, 1, "p"), func() error { return nil })
		if got := gate.OutcomeOf(err); got != c.want {
			t.Errorf("%s policy: %s (%v), want %s", c.name, got, err, c.want)
		}
	}
	if calls != 1 {
		t.Fatalf("the replacement ran %d times, want once (the original policy must not call it)", calls)
	}
}

// TestAcceptReaderGrantsSkipsOnlyTheModeCheck: a reader's grant
// (NAME/_read) is READ_GRANT under the original policy and judged as any
// grant (accepted: the first write under it) under the returned copy.
func TestAcceptReaderGrantsSkipsOnlyTheModeCheck(t *testing.T) {
	iss := gatetest.NewIssuer("break")
	p := gate.Policy{Verifier: iss.Verifier}
	w := gatetest.Writer{Resource: "break/doc/_read", Owner: "reader-a", Lease: "lease-r", OperationID: "op-r", Fence: 1}
	for _, c := range []struct {
		name string
		pol  gate.Policy
		want gate.Outcome
	}{{"original", p, gate.ReadGrant}, {"check off", gatebreak.AcceptReaderGrants(p), gate.Accepted}} {
		g, err := memgate.New(memgate.Config{Policy: c.pol, Clock: fakeclock.New(iss.Now.Add(time.Second))})
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Apply(context.Background(), w.Owner, iss.Mutation(w, 1, "p"), func() error { return nil })
		if got := gate.OutcomeOf(err); got != c.want {
			t.Errorf("%s policy: %s (%v), want %s", c.name, got, err, c.want)
		}
	}
}
