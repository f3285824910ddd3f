// This file measures the pure decision (Decide alone, and with
// Authenticate's parse and cached proof checks) against the 2 µs/op goal.
// Timings are reported, never asserted.
package gate_test

import (
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func BenchmarkDecide(b *testing.B) {
	f := &fixture{iss: gatetest.NewIssuer("main")}
	f.pol = &gate.Policy{Verifier: f.iss.Verifier}
	f.pol.Check()
	v, err := f.pol.Authenticate(f.iss.Mutation(writerA(6), 3, "p"), owner)
	if err != nil {
		b.Fatal(err)
	}
	in := gate.Input{Verified: v, State: held(6, 2, "op-a"), Status: adapt.EvidenceFromProof(v.Status),
		Now: f.iss.Now, StatusSkewMax: f.pol.StatusSkewMax}
	b.ReportAllocs()
	for b.Loop() {
		if d := gate.Decide(in); d.Outcome != gate.Accepted {
			b.Fatal(d.Err)
		}
	}
}

func BenchmarkAuthenticateAndDecide(b *testing.B) {
	iss := gatetest.NewIssuer("main")
	pol := &gate.Policy{Verifier: iss.Verifier}
	pol.Check()
	m := iss.Mutation(writerA(6), 3, "p")
	st := held(6, 2, "op-a")
	b.ReportAllocs()
	for b.Loop() {
		v, err := pol.Authenticate(m, owner)
		if err != nil {
			b.Fatal(err)
		}
		in := gate.Input{Verified: v, State: st, Status: adapt.EvidenceFromProof(v.Status), Now: iss.Now, StatusSkewMax: pol.StatusSkewMax}
		if d := gate.Decide(in); d.Outcome != gate.Accepted {
			b.Fatal(d.Err)
		}
	}
}
