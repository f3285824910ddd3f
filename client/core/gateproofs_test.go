// This file proves the lease keeps the registry's per-gate proofs and
// hands them on: an envelope carries the gate proofs of the answer whose
// status it carries, a renewal's answer replaces them (their status MACs
// cover only its status), and an answer without them leaves none.
package core_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

func TestLeaseCarriesTheAnswersGateProofs(t *testing.T) {
	iss := gatetest.NewIssuer("core-gate")
	iss.StatusValidFor = 5 * time.Second
	g, gp := iss.Grant(gatetest.Writer{Resource: "ledger/1", Owner: "w", Lease: "l-1", OperationID: "op", Fence: 4})
	answer := func(at time.Time, pairs []grant.GateProof) wire.Issued {
		i := iss.Later(at.Sub(iss.Now))
		st, sp := i.Status(g, grant.StateHeld)
		return wire.Issued{Grant: g, GrantProof: gp, Status: st, StatusProof: sp, GateProofs: pairs}
	}
	first := []grant.GateProof{{Gate: "ledger-db", GrantProof: "mac:l-1:a", StatusProof: "mac:l-1:b"}}
	t0 := iss.Now
	l := core.NewLease(client.Options{}.Limits(), core.Granted{Issued: answer(t0, first), OperationID: "op", From: t0}, nil)
	envelope := func(at time.Time, seq uint64) (gate.Mutation, error) {
		rd := l.Step(at, core.BuildEnvelope{Segment: seq, Payload: gatetest.Payload("p")})
		return rd.Envelope, rd.Err
	}
	m, err := envelope(t0, 1)
	if err != nil || !slices.Equal(m.GateProofs, first) {
		t.Fatalf("first envelope: %+v %v", m.GateProofs, err)
	}
	m.GateProofs[0].Gate = "changed" // the envelope is the caller's copy
	if again, _ := envelope(t0, 1); !slices.Equal(again.GateProofs, first) {
		t.Fatalf("a caller's change reached the lease: %+v", again.GateProofs)
	}
	renewed := []grant.GateProof{{Gate: "ledger-db", GrantProof: "mac:l-2:a", StatusProof: "mac:l-2:c"}}
	for _, want := range [][]grant.GateProof{renewed, nil} {
		rd := l.Next(t0)
		for rd.Call.Kind == core.CallNone {
			rd = l.Next(rd.Wake.Add(time.Millisecond - 1).Truncate(time.Millisecond)) // statements are in whole ms
		}
		call := rd.Call
		at := call.Sent
		l.Step(at, core.Answer{Call: call, Issued: answer(at, want)})
		m, err := envelope(at, 2)
		if err != nil || !slices.Equal(m.GateProofs, want) {
			t.Fatalf("after the answer at %s: %+v %v, want %+v", at, m.GateProofs, err, want)
		}
		t0 = at
	}
}
