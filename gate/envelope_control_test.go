// This file proves the envelope fuzzing's property can fail: the fixture's
// seeds get the answers they are named for, and judge flags a verifier
// that skips the proofs, or one that skips the fence binding, as soon as
// it accepts a forged or altered envelope that the product rejects.
package gate_test

import (
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestEnvelopeFixtureAnswers(t *testing.T) {
	fx := newEnvelopeFixture()
	for _, sd := range fx.seeds {
		if o, err := fx.judge(fx.pol.Authenticate, sd.m); o != sd.want || err != nil {
			t.Errorf("%s: %s, %v; want %s", sd.name, o, err, sd.want)
		}
	}
}

// skipProofs is a broken verifier: it parses grant and status and checks
// nothing else.
func skipProofs(m *gate.Mutation, _ string) (*gate.Verified, error) {
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		return nil, &gate.Rejection{Outcome: gate.BadProof, Reason: err.Error()}
	}
	v := &gate.Verified{Mutation: *m, Grant: g, GrantDigest: g.Digest(), Root: m.OperationRoot()}
	if v.Status, err = grant.ParseStatus(m.Status); err != nil {
		return nil, &gate.Rejection{Outcome: gate.BadProof, Reason: err.Error()}
	}
	return v, nil
}

// skipFenceBinding is a broken verifier: the product's Authenticate,
// except that the envelope's fence need not equal the grant's.
func skipFenceBinding(pol *gate.Policy) authFunc {
	return func(m *gate.Mutation, caller string) (*gate.Verified, error) {
		c := *m
		if g, err := grant.ParseGrant(m.Grant); err == nil {
			c.FenceToken = g.FenceToken
		}
		v, err := pol.Authenticate(&c, caller)
		if err == nil {
			v.Mutation = *m
		}
		return v, err
	}
}

func TestEnvelopeCheckCatchesBrokenVerifier(t *testing.T) {
	fx := newEnvelopeFixture()
	forged := gatetest.NewIssuer("forger").Mutation(writerA(6), 1, "p")
	unbound := *fx.genuine[0]
	unbound.FenceToken = 6
	for _, c := range []struct {
		name   string
		broken authFunc
		m      *gate.Mutation
		real   gate.Outcome
	}{
		{"proofs skipped, forged grant", skipProofs, forged, gate.BadProof},
		{"fence binding skipped, envelope fence raised", skipFenceBinding(fx.pol), &unbound, gate.BindingMismatch},
	} {
		if o, err := fx.judge(fx.pol.Authenticate, c.m); o != c.real || err != nil {
			t.Errorf("%s: product answered %s, %v; want %s", c.name, o, err, c.real)
		}
		if o, err := fx.judge(c.broken, fx.genuine[0]); o != gate.Accepted || err != nil {
			t.Errorf("%s: broken verifier on the genuine envelope: %s, %v", c.name, o, err)
		}
		o, err := fx.judge(c.broken, c.m)
		if err == nil {
			t.Errorf("%s: the property check let the broken verifier's %s through", c.name, o)
		} else {
			t.Logf("%s: caught: %v", c.name, err)
		}
	}
}
