package conformance

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// Owner is the workload identity of the suite's writers.
const Owner = "worker-a"

// RevokedBelow is the issuer epoch below which the suite's bundle revokes.
const RevokedBelow = 4

// Env is one case's world: an issuer playing the registry, the gate's
// clock one second after the issuer's, and the adapter.
type Env struct {
	Ctx   context.Context
	Iss   *gatetest.Issuer
	Clock *fakeclock.Clock
	H     Harness
	tb    testing.TB
	new   Factory
}

// NewEnv builds a world and a harness without a querier.
func NewEnv(tb testing.TB, newHarness Factory) *Env {
	iss := gatetest.NewIssuer("conformance")
	iss.RevokeBelow(RevokedBelow)
	e := &Env{Ctx: context.Background(), Iss: iss, Clock: fakeclock.New(iss.Now.Add(time.Second)), tb: tb, new: newHarness}
	e.H = newHarness(tb, Config{Verifier: iss.Verifier, Clock: e.Clock})
	return e
}

// WithQuerier returns a second harness over a fresh store whose gate asks q.
func (e *Env) WithQuerier(q gate.StatusQuerier) Harness {
	return e.new(e.tb, Config{Verifier: e.Iss.Verifier, Clock: e.Clock, Querier: q})
}

// W describes the suite's grant for (resource, fence, operation).
func W(resource string, fence uint64, op string) gatetest.Writer {
	return gatetest.Writer{Resource: resource, Owner: Owner, Lease: fmt.Sprintf("lease-%d", fence), OperationID: op, Fence: fence}
}

// Mut is a genuine mutation by Owner with a fresh HELD proof; its payload
// digest is gatetest.Payload(payload).
func (e *Env) Mut(resource string, fence uint64, op string, seq uint64, payload string) *gate.Mutation {
	return e.Iss.Mutation(W(resource, fence, op), seq, payload)
}

// apply applies m with its payload on h as Owner.
func apply(t T, e *Env, h Harness, m *gate.Mutation, payload string) (gate.Receipt, error) {
	t.Helper()
	return h.Apply(e.Ctx, Owner, m, payload)
}

// mustAccept applies and fails unless ACCEPTED.
func mustAccept(t T, e *Env, h Harness, m *gate.Mutation, payload string) gate.Receipt {
	t.Helper()
	r, err := apply(t, e, h, m, payload)
	if err != nil {
		t.Fatalf("fence %d segment %d: want ACCEPTED, got %v", m.FenceToken, m.SegmentSeq, err)
	}
	return r
}

// wantOutcome fails unless err carries want.
func wantOutcome(t T, err error, want gate.Outcome) {
	t.Helper()
	if got := gate.OutcomeOf(err); got != want {
		t.Fatalf("outcome %q (%v), want %s", got, err, want)
	}
}

func state(t T, e *Env, h Harness, resource string) gate.FenceState {
	t.Helper()
	st, err := h.State(e.Ctx, resource)
	if err != nil {
		t.Fatalf("state of %s: %v", resource, err)
	}
	return st
}

func effects(t T, e *Env, h Harness, resource string) []string {
	t.Helper()
	fx, err := h.Effects(e.Ctx, resource)
	if err != nil {
		t.Fatalf("effects of %s: %v", resource, err)
	}
	return fx
}

func records(t T, e *Env, h Harness, resource string) Records {
	t.Helper()
	rs, err := h.Records(e.Ctx, resource)
	if err != nil {
		t.Fatalf("records of %s: %v", resource, err)
	}
	return rs
}

// snapshot is everything a rejection must leave as it was.
type snapshot struct {
	State   gate.FenceState
	Effects []string
	Records Records
}

func snap(t T, e *Env, h Harness, resource string) snapshot {
	t.Helper()
	return snapshot{state(t, e, h, resource), effects(t, e, h, resource), records(t, e, h, resource)}
}

// unchanged fails unless the resource's state, effects and records equal
// before.
func unchanged(t T, e *Env, h Harness, resource string, before snapshot, what string) {
	t.Helper()
	after := snap(t, e, h, resource)
	if !sameState(before.State, after.State) {
		t.Fatalf("%s changed the stored state:\n before %+v\n after  %+v", what, before.State, after.State)
	}
	if !slices.Equal(before.Effects, after.Effects) {
		t.Fatalf("%s changed the business effects: %q → %q", what, before.Effects, after.Effects)
	}
	if !sameRecords(before.Records, after.Records) {
		t.Fatalf("%s changed the records: %+v → %+v", what, before.Records, after.Records)
	}
}

func sameRecords(a, b Records) bool {
	return slices.Equal(a.Alarms, b.Alarms) && a.Quarantined == b.Quarantined && a.ShadowLog == b.ShadowLog
}

// sameState compares two states field by field (instants with Equal).
func sameState(a, b gate.FenceState) bool {
	return a.GrantIssuedAt.Equal(b.GrantIssuedAt) && a.FloorAt.Equal(b.FloorAt) &&
		withoutTimes(a) == withoutTimes(b)
}

func withoutTimes(s gate.FenceState) gate.FenceState {
	s.GrantIssuedAt, s.FloorAt = time.Time{}, time.Time{}
	return s
}

// grantOf returns the parsed grant of m.
func grantOf(t T, m *gate.Mutation) *grant.Grant {
	t.Helper()
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		t.Fatalf("parse grant: %v", err)
	}
	return g
}

// wantAlarms fails unless the resource's alarms are exactly kinds.
func wantAlarms(t T, e *Env, h Harness, resource string, kinds ...gate.AlarmKind) {
	t.Helper()
	if got := records(t, e, h, resource).Alarms; !slices.Equal(got, kinds) {
		t.Fatalf("alarms %v, want %v", got, kinds)
	}
}
