// Package gatetest mints genuine and deliberately broken grants, status
// proofs and mutations for tests of the gate and of code built on it. It
// plays the registry's signing role with a deterministic key; it is not a
// registry (it allocates no fences and judges no leases).
package gatetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// Epoch is the issuer epoch the Issuer signs under by default.
const Epoch = 7

// Issuer signs grants and status proofs with a deterministic Ed25519 key.
type Issuer struct {
	Key      *grant.SigningKey
	Verifier *grant.Verifier
	Epoch    uint64
	// Now is the registry clock used for issuedAt; tests move it.
	Now time.Time
	// StatusValidFor is how long a status proof is valid from Now.
	// Defaults to 10 s.
	StatusValidFor time.Duration
	// HeldFor is how long a held-form grant (HeldGrant) stands as HELD
	// evidence from Now. Zero takes HeldForDefault.
	HeldFor time.Duration
}

// HeldForDefault is the held statement of HeldGrant when Issuer.HeldFor
// is zero: half the 10 s TTL, so a gate that took the grant as HELD until
// its expiry instead would show.
const HeldForDefault = 5 * time.Second

// T0 is the fixed instant issuers start at.
var T0 = time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)

// NewIssuer returns an issuer whose key is derived from seed; its
// Verifier trusts that key for epochs 1 and up.
func NewIssuer(seed string) *Issuer {
	s := sha256.Sum256([]byte("gatetest/" + seed))
	k, err := grant.GenerateKey(grant.AlgEd25519, "k-"+seed, bytes.NewReader(s[:]))
	if err != nil {
		panic(err)
	}
	return &Issuer{Key: k, Verifier: grant.NewVerifier(bundleFor(k, 1, 0), 0), Epoch: Epoch, Now: T0, StatusValidFor: 10 * time.Second}
}

func bundleFor(k *grant.SigningKey, version, revokedBelow uint64) *grant.Bundle {
	pub := base64.RawURLEncoding.EncodeToString(k.PublicKey())
	b, err := grant.NewBundle(grant.BundleFile{
		Version: version, RevokedBelowEpoch: revokedBelow,
		Keys: []grant.BundleKey{{KeyID: k.KeyID, Alg: grant.AlgEd25519, PublicKey: pub, MinEpoch: 1, State: grant.KeyActive}},
	}, "")
	if err != nil {
		panic(err)
	}
	return b
}

// Later returns a copy of the issuer whose clock is d later (d < 0:
// earlier), sharing its key and verifier: grants and status proofs it
// makes are issued at the shifted instant.
func (i *Issuer) Later(d time.Duration) *Issuer {
	c := *i
	c.Now = i.Now.Add(d)
	return &c
}

// RevokeBelow installs a newer bundle revoking epochs below epoch.
func (i *Issuer) RevokeBelow(epoch uint64) {
	if err := i.Verifier.Replace(bundleFor(i.Key, i.Verifier.Bundle().Version()+1, epoch)); err != nil {
		panic(err)
	}
}

// Writer describes one grant: who writes what under which fence.
type Writer struct {
	Resource         string
	Owner            string
	Lease            string
	OperationID      string
	Fence            uint64
	PolicyGeneration uint64 // 0 means 1
	OperationClass   string // "" means "settle"
}

// Grant returns the signed grant for w.
func (i *Issuer) Grant(w Writer) (*grant.Grant, string) {
	g := &grant.Grant{
		Resource: w.Resource, Owner: w.Owner, RequestID: "req-" + w.Lease, Lease: w.Lease,
		OperationRoot: grant.OperationRoot(w.Resource, w.OperationID), OperationClass: w.OperationClass,
		FenceToken: w.Fence, BackendRevision: 1000 + w.Fence, PolicyGeneration: w.PolicyGeneration,
		IssuerEpoch: i.Epoch, TTLMs: 10000, IssuedAt: i.Now, ExpiresAt: i.Now.Add(10 * time.Second),
	}
	if g.OperationClass == "" {
		g.OperationClass = "settle"
	}
	if g.PolicyGeneration == 0 {
		g.PolicyGeneration = 1
	}
	return g, i.sign(g)
}

// HeldGrant returns the signed grant for w in the held-statement form:
// HELD from Now until Now + HeldFor (never past its expiry).
func (i *Issuer) HeldGrant(w Writer) (*grant.Grant, string) {
	g, _ := i.Grant(w)
	held := i.HeldFor
	if held == 0 {
		held = HeldForDefault
	}
	g.HeldUntil = i.Now.Add(min(held, time.Duration(g.TTLMs)*time.Millisecond))
	return g, i.sign(g)
}

// HeldMutation returns a genuine mutation by w for segment seq whose grant
// is its own HELD statement (HeldGrant), carrying no status proof: what
// a writer sends after an acquire, before its first renewal.
func (i *Issuer) HeldMutation(w Writer, seq uint64, payload string) *gate.Mutation {
	g, gp := i.HeldGrant(w)
	return &gate.Mutation{
		Resource: w.Resource, Lease: w.Lease, OperationID: w.OperationID, FenceToken: w.Fence,
		SegmentSeq: seq, PayloadDigest: Payload(payload), Grant: g.Encode(), GrantProof: gp,
	}
}

// Status returns a signed status statement about g.
func (i *Issuer) Status(g *grant.Grant, state grant.State) (*grant.Status, string) {
	s := &grant.Status{
		Grant: g.Digest(), State: state, BackendRevision: g.BackendRevision + 1, IssuerEpoch: i.Epoch,
		IssuedAt: i.Now, ValidUntil: i.Now.Add(i.StatusValidFor),
	}
	return s, i.sign(s)
}

func (i *Issuer) sign(m grant.Message) string {
	p, err := i.Key.Sign(m)
	if err != nil {
		panic(fmt.Sprintf("gatetest: sign: %v", err))
	}
	return p
}

// Payload returns the digest of a payload text.
func Payload(s string) grant.Digest { return sha256.Sum256([]byte(s)) }

// Mutation returns a genuine mutation by w for segment seq with a HELD
// status proof valid for StatusValidFor from Now.
func (i *Issuer) Mutation(w Writer, seq uint64, payload string) *gate.Mutation {
	g, gp := i.Grant(w)
	s, sp := i.Status(g, grant.StateHeld)
	return &gate.Mutation{
		Resource: w.Resource, Lease: w.Lease, OperationID: w.OperationID, FenceToken: w.Fence,
		SegmentSeq: seq, PayloadDigest: Payload(payload), Grant: g.Encode(), GrantProof: gp,
		Status: s.Encode(), StatusProof: sp,
	}
}

// WithStatus returns a copy of m whose status proof says state.
func (i *Issuer) WithStatus(m *gate.Mutation, state grant.State) *gate.Mutation {
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		panic(err)
	}
	s, sp := i.Status(g, state)
	c := *m
	c.Status, c.StatusProof = s.Encode(), sp
	return &c
}

// WithoutStatus returns a copy of m carrying no status proof (for a gate
// with a StatusQuerier).
func WithoutStatus(m *gate.Mutation) *gate.Mutation {
	c := *m
	c.Status, c.StatusProof = nil, ""
	return &c
}

// HeldBatchMutations returns one genuine mutation per writer, segment 1,
// whose grants are held-form grants (HeldGrant) signed together as one
// batch: one Ed25519 signature over their tree's root, each grant proof
// its inclusion path (grant.SigningKey.SignBatch), as a registry with
// batch signing on answers the acquires of one group.
func (i *Issuer) HeldBatchMutations(ws []Writer, payload string) []*gate.Mutation {
	gs := make([]grant.Message, len(ws))
	for n, w := range ws {
		gs[n], _ = i.HeldGrant(w)
	}
	ps, err := i.Key.SignBatch(gs)
	if err != nil {
		panic(fmt.Sprintf("gatetest: sign batch: %v", err))
	}
	out := make([]*gate.Mutation, len(ws))
	for n, w := range ws {
		out[n] = &gate.Mutation{
			Resource: w.Resource, Lease: w.Lease, OperationID: w.OperationID, FenceToken: w.Fence,
			SegmentSeq: 1, PayloadDigest: Payload(payload), Grant: gs[n].Encode(), GrantProof: ps[n],
		}
	}
	return out
}
