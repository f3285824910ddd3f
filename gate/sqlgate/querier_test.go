// This file proves the linearizable status querier: a mutation without a
// status proof is decided on the registry's answer, asked with the fence
// row locked, and a query that fails never accepts.
package sqlgate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// fakeRegistry answers status queries: HELD iff the grant's fence is the
// current one.
type fakeRegistry struct {
	current func() uint64
	fences  map[grant.Digest]uint64
	err     error
}

func (f *fakeRegistry) QueryStatus(ctx context.Context, g *grant.Grant) (grant.State, uint64, error) {
	d := g.Digest()
	if f.err != nil {
		return "", 0, f.err
	}
	if f.fences[d] == f.current() {
		return grant.StateHeld, gatetest.Epoch, nil
	}
	return grant.StateExpired, gatetest.Epoch, nil
}

func testQuerier(t *testing.T, b backend) {
	cur := uint64(5)
	reg := &fakeRegistry{current: func() uint64 { return cur }, fences: map[grant.Digest]uint64{}}
	e := newEnv(t, b, reg)
	const r = "q/one"
	mut := func(fence uint64, op string) *gate.Mutation {
		m := gatetest.WithoutStatus(e.iss.Mutation(wr(r, fence, op), 1, "p"))
		g, _ := grant.ParseGrant(m.Grant)
		reg.fences[g.Digest()] = fence
		return m
	}
	if _, err := e.apply(owner, mut(5, "op-a"), "p"); err != nil {
		t.Fatal(err)
	}
	cur = 6
	if _, err := e.apply(owner, mut(4, "op-old"), "p"); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("old fence: %v", err)
	}
	reg.err = errors.New("registry unreachable")
	if _, err := e.apply(owner, mut(6, "op-b"), "p"); !errors.Is(err, gate.ErrNotHeld) {
		t.Fatalf("query error must never accept: %v", err)
	}
	reg.err = nil
	if _, err := e.apply(owner, mut(6, "op-b"), "p"); err != nil {
		t.Fatal(err)
	}
}
