// This file proves that every authentication failure class (steps 1–4) is
// rejected with its own code before any resource state is consulted.
package gate_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

const (
	res   = "invoice-batch/2026-07-19"
	owner = "worker-a"
)

func writerA(fence uint64) gatetest.Writer {
	return gatetest.Writer{Resource: res, Owner: owner, Lease: "lease-a", OperationID: "op-a", Fence: fence}
}

func TestAuthenticateRejections(t *testing.T) {
	iss := gatetest.NewIssuer("main")
	other := gatetest.NewIssuer("forger")
	pol := &gate.Policy{Verifier: iss.Verifier, OperationClasses: []string{"settle"}}
	if err := pol.Check(); err != nil {
		t.Fatal(err)
	}
	good := func() *gate.Mutation { return iss.Mutation(writerA(5), 1, "p") }
	cases := []struct {
		name   string
		mut    func() *gate.Mutation
		caller string
		want   error
	}{
		{"envelope seq 0", func() *gate.Mutation { m := good(); m.SegmentSeq = 0; return m }, owner, gate.ErrMalformed},
		{"huge forged fence", func() *gate.Mutation { m := good(); m.FenceToken = 1 << 63; return m }, owner, gate.ErrMalformed},
		{"status without proof", func() *gate.Mutation { m := good(); m.StatusProof = ""; return m }, owner, gate.ErrMalformed},
		{"grant bytes garbage", func() *gate.Mutation { m := good(); m.Grant = []byte("schema: nope\n"); return m }, owner, gate.ErrBadProof},
		{"tampered grant fence", func() *gate.Mutation {
			m := good()
			g, _ := grant.ParseGrant(m.Grant)
			g.FenceToken = 9
			m.Grant, m.FenceToken = g.Encode(), 9
			return m
		}, owner, gate.ErrBadProof},
		{"forged grant proof", func() *gate.Mutation {
			m := good()
			_, fp := other.Grant(writerA(5))
			m.GrantProof = fp
			return m
		}, owner, gate.ErrBadProof},
		{"forged status proof", func() *gate.Mutation {
			m := good()
			g, _ := grant.ParseGrant(m.Grant)
			s, sp := other.Status(g, grant.StateHeld)
			m.Status, m.StatusProof = s.Encode(), sp
			return m
		}, owner, gate.ErrBadProof},
		{"status about another grant", func() *gate.Mutation {
			m := good()
			o := iss.Mutation(writerA(6), 1, "p")
			m.Status, m.StatusProof = o.Status, o.StatusProof
			return m
		}, owner, gate.ErrBindingMismatch},
		{"proof replayed across resources", func() *gate.Mutation {
			m := good()
			m.Resource = "invoice-batch/other"
			return m
		}, owner, gate.ErrBindingMismatch},
		{"other lease", func() *gate.Mutation { m := good(); m.Lease = "lease-b"; return m }, owner, gate.ErrBindingMismatch},
		{"other operation", func() *gate.Mutation { m := good(); m.OperationID = "op-b"; return m }, owner, gate.ErrBindingMismatch},
		{"envelope fence differs", func() *gate.Mutation { m := good(); m.FenceToken = 6; return m }, owner, gate.ErrBindingMismatch},
		{"class not allowed", func() *gate.Mutation {
			w := writerA(5)
			w.OperationClass = "purge"
			return iss.Mutation(w, 1, "p")
		}, owner, gate.ErrBindingMismatch},
		{"caller is not owner", good, "worker-b", gate.ErrIdentityMismatch},
		{"revoked epoch", func() *gate.Mutation {
			i2 := gatetest.NewIssuer("main")
			i2.Epoch = 3
			return i2.Mutation(writerA(5), 1, "p")
		}, owner, gate.ErrEpochRevoked},
	}
	iss.RevokeBelow(4)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := pol.Authenticate(c.mut(), c.caller)
			if v != nil || !errors.Is(err, c.want) {
				t.Fatalf("got %v, %v; want %v", v, err, c.want)
			}
			var r *gate.Rejection
			if !errors.As(err, &r) || r.Reason == "" || r.HighestFence != 0 {
				t.Fatalf("want a *Rejection with a reason, got %#v", err)
			}
		})
	}
	t.Run("genuine", func(t *testing.T) {
		v, err := pol.Authenticate(good(), owner)
		if err != nil || v.Status == nil || v.Root != grant.OperationRoot(res, "op-a") {
			t.Fatalf("got %+v, %v", v, err)
		}
	})
}
