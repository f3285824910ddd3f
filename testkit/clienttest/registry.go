package clienttest

import (
	"bytes"
	"crypto/sha256"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
)

// Epoch is the issuer epoch fixture registries sign under.
const Epoch = 7

// Registry is a real registry over the memory store, with a deterministic
// signing key and a verifier (for gates) that trusts it.
type Registry struct {
	*registry.Registry
	Store    registry.Store
	Verifier *grant.Verifier
}

// NewRegistry returns a fixture registry on clk over store (nil: a new
// memory store). mutate, if not nil, adjusts the default configuration.
func NewRegistry(clk clock.Clock, store registry.Store, mutate func(*registry.Config)) (*Registry, error) {
	seed := sha256.Sum256([]byte("clienttest/registry"))
	k, err := grant.GenerateKey(grant.AlgEd25519, "reg-1", bytes.NewReader(seed[:]))
	if err != nil {
		return nil, err
	}
	pub := grant.EncodeKey(k.PublicKey())
	b, err := grant.NewBundle(grant.BundleFile{Version: 1, Keys: []grant.BundleKey{{
		KeyID: k.KeyID, Alg: k.Alg, PublicKey: pub, MinEpoch: 1, State: grant.KeyActive,
	}}}, "")
	if err != nil {
		return nil, err
	}
	cfg := registry.DefaultConfig(Epoch)
	cfg.WaitPollMsMax = 5 // a fake clock wakes no sleepers; poll fast
	if mutate != nil {
		mutate(&cfg)
	}
	if store == nil {
		store = memstore.New()
	}
	r, err := registry.New(store, cfg, clk, k)
	if err != nil {
		return nil, err
	}
	return &Registry{Registry: r, Store: store, Verifier: grant.NewVerifier(b, 64)}, nil
}
