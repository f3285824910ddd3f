package clienttest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// RunScenarios runs the client's end-to-end scenarios — lost acquire
// response, lost renewal, pause past TTL, and each MUTATION_UNKNOWN branch
// — against a real registry over the store newStore returns (nil: memory)
// and a real gate on SQLite. The client package runs it on the memory
// store; etcd_test.go here runs it on embedded etcd.
func RunScenarios(t *testing.T, newStore func(t testing.TB) registry.Store) {
	for _, sc := range []struct {
		name string
		run  func(*testing.T, *Env)
	}{
		{"LostAcquireResponseRecoversSameRequestID", scenarioLostAcquireResponseRecoversSameRequestID},
		{"LostRenewalGoesUnknownThenHeldOnConfirmation", scenarioLostRenewalGoesUnknownThenHeldOnConfirmation},
		{"PausePastTTL", scenarioPausePastTTL},
		{"UnknownAcceptedReusesReceipt", scenarioUnknownAcceptedReusesReceipt},
		{"UnknownProvenAbsentThenNewOperationUnderNewFence", scenarioUnknownProvenAbsentThenNewOperationUnderNewFence},
		{"UnknownUndeterminedQueuedAlarmedAndReconciled", scenarioUnknownUndeterminedQueuedAlarmedAndReconciled},
	} {
		t.Run(sc.name, func(t *testing.T) {
			var store registry.Store
			if newStore != nil {
				store = newStore(t)
			}
			sc.run(t, NewEnv(t, store))
		})
	}
}

func scenarioLostAcquireResponseRecoversSameRequestID(t *testing.T, f *Env) {
	w := f.Worker(OwnerA, 10, true)
	first := true
	w.Net.Fault = func(op, _ string) Fault {
		if op == "Acquire" && first {
			first = false
			return DropResponse // granted, answer lost
		}
		return Pass
	}
	l, err := f.Acquire(f.Ctx, w, Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	ids := w.Net.RequestIDs()
	if len(ids) != 1 || l.Grant().RequestID != ids[0] {
		t.Fatalf("request IDs used %q, grant's %s: want one", ids, l.Grant().RequestID)
	}
	if q := w.Net.CallsOf("QueryRequest"); len(q) == 0 {
		t.Fatal("no QueryRequest: the lost grant must be recovered by the same request ID")
	}
	if l.Grant().FenceToken != 1 {
		t.Fatalf("fence %d: the lost grant was not the one recovered", l.Grant().FenceToken)
	}
}

func scenarioLostRenewalGoesUnknownThenHeldOnConfirmation(t *testing.T, f *Env) {
	w := f.Worker(OwnerA, 2, true)
	l, err := f.Acquire(f.Ctx, w, Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	first := l.Ctx()
	renews := 0
	w.Net.Fault = func(op, _ string) Fault {
		if op != "Renew" {
			return Pass
		}
		if renews++; renews == 1 {
			return DropResponse // applied, answer lost
		}
		return DropRequest // and the registry stays unreachable
	}
	f.TickUntil(l, 250*time.Millisecond, func() bool { return l.State() != client.StateHeld })
	if l.State() != client.StateUnknown {
		t.Fatalf("after a lost renewal: %s, want OWNERSHIP_UNKNOWN", l.State())
	}
	if first.Err() == nil {
		t.Fatal("ownership context not cancelled at once")
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); !errors.Is(err, client.ErrNotCertain) {
		t.Fatalf("envelope while unknown: %v, want ErrNotHeld", err)
	}
	// Queries keep failing: it stays UNKNOWN, never guesses.
	for range 3 {
		f.Clock.Advance(client.QueryIntervalDefault)
		if st := l.Tick(f.Ctx); st != client.StateUnknown {
			t.Fatalf("unanswered query moved the lease to %s", st)
		}
	}
	w.Net.Fault = nil
	f.Clock.Advance(client.QueryIntervalDefault)
	if st := l.Tick(f.Ctx); st != client.StateHeld {
		t.Fatalf("after the registry confirmed the grant: %s, want HELD", st)
	}
	second := l.Ctx()
	if second == first || second.Err() != nil || first.Err() == nil {
		t.Fatal("want a new live context and the old one still cancelled")
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); err != nil {
		t.Fatalf("envelope after confirmation: %v", err)
	}
	want := []string{
		"REQUESTED -AcquireOK-> HELD", "HELD -RenewDue-> RENEWING", "RENEWING -RenewLost-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN", // the immediate query
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryHeld-> HELD",
	}
	got := w.Rec.Lines()
	// Drop routine refresh cycles before the loss.
	for len(got) > 2 && got[1] == "HELD -RenewDue-> RENEWING" && got[2] == "RENEWING -RenewOK-> HELD" {
		got = append(got[:1], got[3:]...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("transitions\n%q\nwant\n%q", got, want)
	}
}

func scenarioPausePastTTL(t *testing.T, f *Env) {
	res := f.Resource()
	a, b := f.Worker(OwnerA, 20, true), f.Worker(OwnerB, 21, true)
	la, err := f.Acquire(f.Ctx, a, Request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	e1, err := la.Envelope(1, gatetest.Payload("a1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Write(f.Ctx, OwnerA, e1, "a1"); err != nil {
		t.Fatalf("A's first segment: %v", err)
	}
	inFlight, err := la.Envelope(2, gatetest.Payload("a2")) // emitted, then A stalls
	if err != nil {
		t.Fatal(err)
	}

	f.Clock.Advance(TTL + 2*time.Second) // A is paused: no Tick, no renewal

	lb, err := f.Acquire(f.Ctx, b, Request("op-b"))
	if err != nil {
		t.Fatalf("B takes over: %v", err)
	}
	eb, err := lb.Envelope(1, gatetest.Payload("b1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Write(f.Ctx, OwnerB, eb, "b1"); err != nil {
		t.Fatalf("B's segment: %v", err)
	}

	// A resumes. Before its loop has run, it already refuses new effects.
	if _, err := la.Envelope(2, gatetest.Payload("a2")); !errors.Is(err, client.ErrNotCertain) {
		t.Fatalf("envelope after the pause: %v, want ErrNotHeld", err)
	}
	if st := la.Tick(f.Ctx); st != client.StateExpired {
		t.Fatalf("A after resuming: %s, want EXPIRED (registry-confirmed)", st)
	}
	// The envelope A emitted before the pause arrives late: rejected.
	_, err = res.Write(f.Ctx, OwnerA, inFlight, "a2")
	if gate.IsSuccess(err) || gate.OutcomeOf(err) == "" {
		t.Fatalf("late write from the paused owner: %v, want a gate rejection", err)
	}
	if n := res.Rows(t); n != 2 {
		t.Fatalf("%d ledger rows, want 2 (a1, b1)", n)
	}
	// And the resource's highest fence is B's, so no A envelope can ever
	// be accepted again, whatever status it carries.
	st, err := res.Gate.State(f.Ctx, res.DB, Resource)
	if err != nil {
		t.Fatal(err)
	}
	if st.HighestFence != lb.Grant().FenceToken {
		t.Fatalf("highestFence %d, want B's %d", st.HighestFence, lb.Grant().FenceToken)
	}
}
