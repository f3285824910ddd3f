// This file holds the envelope fuzzing's fixture and its property: a gate
// over real Ed25519 keys and a real trust bundle, the genuine envelopes it
// must accept, signed near-misses it must reject, and judge, which runs
// Authenticate and Decide on one envelope and reports any answer that
// breaks the property (see FuzzEnvelope).
package gate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// The fixture's resources. resEqual's fence state is already at its
// genuine grant's fence, so its genuine envelope continues a segment run.
const (
	resOther = "ledger/acct-9"
	resEqual = "queue/q-1"
)

// fixtureEpochRevokedBelow is the trust bundle's revokedBelowEpoch: the
// genuine issuer signs at gatetest.Epoch (7), the revoked near-miss at 2.
const fixtureEpochRevokedBelow = 3

// authFunc is Policy.Authenticate's shape, so the negative control can
// put a broken verifier where the product's one runs.
type authFunc func(m *gate.Mutation, caller string) (*gate.Verified, error)

type envelopeFixture struct {
	pol, polNoCache *gate.Policy
	// genuine are the envelopes the gate accepts, each with the one
	// segment number its resource's state lets through.
	genuine []*gate.Mutation
	// seeds are the genuine envelopes and signed near-misses, each with
	// the answer the gate must give: the fuzzers' seed corpus.
	seeds  []seedEnvelope
	states map[string]gate.FenceState
	now    time.Time
}

// seedEnvelope is one seed: its corpus file name, the envelope and the
// outcome the fixture's gate answers.
type seedEnvelope struct {
	name string
	m    *gate.Mutation
	want gate.Outcome
}

func newEnvelopeFixture() *envelopeFixture {
	iss := gatetest.NewIssuer("main")
	iss.RevokeBelow(fixtureEpochRevokedBelow)
	fx := &envelopeFixture{states: map[string]gate.FenceState{}, now: gatetest.T0.Add(time.Second)}
	policy := func(cacheEntriesMax int) *gate.Policy {
		p := &gate.Policy{Verifier: iss.Verifier, OperationClasses: []string{"settle"}, ParsedCacheEntriesMax: cacheEntriesMax}
		if err := p.Check(); err != nil {
			panic(err)
		}
		return p
	}
	fx.pol, fx.polNoCache = policy(0), policy(-1) // the default cache, and none
	a := writerA(5)
	other := gatetest.Writer{Resource: resOther, Owner: owner, Lease: "lease-b", OperationID: "op-b", Fence: 9}
	equal := gatetest.Writer{Resource: resEqual, Owner: owner, Lease: "lease-c", OperationID: "op-c", Fence: 7, PolicyGeneration: 3}
	gEqual, _ := iss.Grant(equal)
	fx.genuine = []*gate.Mutation{iss.Mutation(a, 1, "p"), iss.Mutation(other, 1, "q"), iss.Mutation(equal, 3, "r")}
	for i, name := range []string{"genuine-first-segment", "genuine-other-resource", "genuine-next-segment"} {
		fx.seeds = append(fx.seeds, seedEnvelope{name, fx.genuine[i], gate.Accepted})
	}
	for _, r := range []string{res, resOther} {
		fx.states[r] = gate.FenceState{Resource: r, Mode: gate.ModeEnforce, HighestFence: 4, LastSegmentSeq: 2,
			Root: grant.OperationRoot(r, "op-old"), GrantIssuedAt: gatetest.T0.Add(-time.Minute), MinPolicyGeneration: 1}
	}
	fx.states[resEqual] = gate.FenceState{Resource: resEqual, Mode: gate.ModeEnforce, HighestFence: 7, LastSegmentSeq: 2,
		Root: gEqual.OperationRoot, GrantDigest: gEqual.Digest(), GrantIssuedAt: gEqual.IssuedAt, MinPolicyGeneration: 3}
	fx.seeds = append(fx.seeds, fx.signedNearMisses(iss, a, equal)...)
	return fx
}

// signedNearMisses are genuinely signed envelopes that must each be
// rejected: they give the fuzzer every signed artefact a splice could
// combine, and reach every rejection class.
func (fx *envelopeFixture) signedNearMisses(iss *gatetest.Issuer, a, equal gatetest.Writer) []seedEnvelope {
	revoked := *iss
	revoked.Epoch = 2
	stalePolicy, purge, z, stale := equal, a, a, a
	stalePolicy.Fence, stalePolicy.PolicyGeneration = 8, 2
	purge.OperationClass = "purge"
	z.Owner = "worker-z"
	stale.Fence = 3
	cross := *fx.genuine[0]
	cross.Status, cross.StatusProof = fx.genuine[1].Status, fx.genuine[1].StatusProof
	return []seedEnvelope{
		{"status-expired", iss.WithStatus(fx.genuine[0], grant.StateExpired), gate.NotHeld},
		{"forged-key", gatetest.NewIssuer("forger").Mutation(a, 1, "p"), gate.BadProof},
		{"revoked-epoch", revoked.Mutation(a, 1, "p"), gate.EpochRevoked},
		{"other-owner", iss.Mutation(z, 1, "p"), gate.IdentityMismatch},
		{"class-not-allowed", iss.Mutation(purge, 1, "p"), gate.BindingMismatch},
		{"status-of-other-grant", &cross, gate.BindingMismatch},
		{"stale-owner", iss.Later(-2*time.Minute).Mutation(stale, 1, "p"), gate.StaleOwner},
		{"held-after-highest", iss.Mutation(stale, 1, "p"), gate.FenceRegression},
		{"proof-expired", iss.Later(-30*time.Second).Mutation(a, 1, "p"), gate.ProofExpired},
		{"policy-stale", iss.Mutation(stalePolicy, 1, "p"), gate.PolicyStale},
		{"gap-first-segment", iss.Mutation(a, 2, "p"), gate.SegmentGap},
		{"gap-next-segment", iss.Mutation(equal, 4, "r"), gate.SegmentGap},
	}
}

// authOutcomes are the codes Authenticate may answer with.
var authOutcomes = map[gate.Outcome]bool{
	gate.Malformed: true, gate.BadProof: true, gate.BindingMismatch: true,
	gate.IdentityMismatch: true, gate.EpochRevoked: true,
}

// identity is an envelope's security-relevant content: its canonical wire
// form with the payload digest left out (the writer chooses its payload;
// the grant does not bind it).
func identity(m *gate.Mutation) []byte {
	c := *m
	c.PayloadDigest = grant.Digest{}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return b
}

// judge runs auth and Decide on m as the fixture's gate at fx.now and
// returns the outcome, or an error when the answer breaks the property:
// an accept of anything but a genuine envelope, a rejection without its
// stable code, or a rejection that moves highestFence.
func (fx *envelopeFixture) judge(auth authFunc, m *gate.Mutation) (gate.Outcome, error) {
	v, err := auth(m, owner)
	if err != nil {
		o := gate.OutcomeOf(err)
		if !authOutcomes[o] || !errors.Is(err, o.Err()) {
			return o, fmt.Errorf("authentication rejected without a stable code (%q): %v", o, err)
		}
		return o, nil
	}
	st, ok := fx.states[v.Mutation.Resource]
	if !ok { // a resource no write has reached
		st = gate.FenceState{Resource: v.Mutation.Resource, Mode: gate.ModeEnforce}
	}
	in := gate.Input{Verified: v, State: st, Now: fx.now, StatusSkewMax: gate.StatusSkewMaxDefault}
	if v.Status != nil {
		in.Status = adapt.EvidenceFromProof(v.Status)
	}
	d := gate.Decide(in)
	if d.Outcome != gate.Accepted {
		var r *gate.Rejection
		switch {
		case !errors.As(d.Err, &r) || r.Outcome != d.Outcome || !errors.Is(d.Err, d.Outcome.Err()):
			return d.Outcome, fmt.Errorf("decision %q without a matching rejection: %v", d.Outcome, d.Err)
		case d.Proceed || d.State.HighestFence != st.HighestFence:
			return d.Outcome, fmt.Errorf("rejection %q proceeds (%v) or moves highestFence %d → %d", d.Outcome, d.Proceed, st.HighestFence, d.State.HighestFence)
		}
		return d.Outcome, nil
	}
	id := identity(&v.Mutation)
	for _, g := range fx.genuine {
		if bytes.Equal(id, identity(g)) {
			return gate.Accepted, nil
		}
	}
	return gate.Accepted, fmt.Errorf("accepted an envelope that is no genuine one:\n%s", id)
}
