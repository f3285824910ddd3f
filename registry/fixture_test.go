// This file holds the fixtures the registry tests share: a fake clock the
// test moves by hand, a signing key with a bundle that trusts it, and a
// registry over the memory store.
package registry_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/wire"
)

const epoch = 7

func testKey(t testing.TB) (*grant.SigningKey, *grant.Verifier) {
	t.Helper()
	k, err := grant.GenerateKey(grant.AlgEd25519, "reg-1", bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := grant.NewBundle(grant.BundleFile{Version: 1, Keys: []grant.BundleKey{{
		KeyID: k.KeyID, Alg: k.Alg, PublicKey: b64(k.PublicKey()), MinEpoch: 1, State: grant.KeyActive,
	}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	return k, grant.NewVerifier(b, 64)
}

type env struct {
	t      testing.TB
	clock  *fakeclock.Clock
	store  *memstore.Store
	reg    *registry.Registry
	verify *grant.Verifier
	ctx    context.Context
}

func newEnv(t testing.TB, mutate func(*registry.Config)) *env {
	t.Helper()
	k, v := testKey(t)
	cfg := registry.DefaultConfig(epoch)
	cfg.WaitPollMsMax = 5 // the fake clock does not wake sleepers; poll fast
	if mutate != nil {
		mutate(&cfg)
	}
	e := &env{t: t, clock: fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)), store: memstore.New(), verify: v, ctx: context.Background()}
	reg, err := registry.New(e.store, cfg, e.clock, k)
	if err != nil {
		t.Fatal(err)
	}
	e.reg = reg
	return e
}

func req(resource, requestID string) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: resource, OperationID: "op-" + requestID, OperationClass: "settle", RequestID: requestID, TTLMs: 10_000}
}

// mustAcquire acquires and checks both proofs verify.
func (e *env) mustAcquire(owner string, r wire.AcquireRequest) wire.Issued {
	e.t.Helper()
	is, err := e.reg.Acquire(e.ctx, owner, r)
	if err != nil {
		e.t.Fatalf("acquire %s %s: %v", owner, r.RequestID, err)
	}
	e.checkProofs(is)
	return is
}

func (e *env) checkProofs(is wire.Issued) {
	e.t.Helper()
	if err := e.verify.Verify(is.Grant, is.GrantProof); err != nil {
		e.t.Fatalf("grant proof: %v", err)
	}
	if is.Status == nil {
		// A fresh grant: its own HELD statement, no status.
		if !is.Grant.HeldStatement() || is.StatusProof != "" {
			e.t.Fatalf("an answer without a status must carry a held statement: %+v", is)
		}
		return
	}
	if err := e.verify.Verify(is.Status, is.StatusProof); err != nil {
		e.t.Fatalf("status proof: %v", err)
	}
	if is.Status.Grant != is.Grant.Digest() {
		e.t.Fatal("status names another grant")
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
