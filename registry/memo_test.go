// This file proves the grant memo saves a renewal's read and the grant's
// second signature without changing its answer: a renewal by the issuing
// Registry reads nothing and returns the very grant and proof a Registry
// without the memo returns after reading, and a memo entry for another
// grant body under the same lease is never used (planting one with a wrong
// revision shows the guard is what keeps the answer right).
package registry_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/wire"
)

// countingStore counts Reads of a memory store.
type countingStore struct {
	*memstore.Store
	reads atomic.Int64
}

func (c *countingStore) Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	c.reads.Add(1)
	return c.Store.Read(ctx, resource, keys)
}

func memoRegistries(t *testing.T) (*countingStore, *registry.Registry, *registry.Registry) {
	t.Helper()
	k, err := grant.GenerateKey(grant.AlgEd25519, "memo", bytes.NewReader(bytes.Repeat([]byte{3}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	st := &countingStore{Store: memstore.New()}
	clock := fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC))
	a, err := registry.New(st, registry.DefaultConfig(1), clock, k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := registry.New(st, registry.DefaultConfig(1), clock, k)
	if err != nil {
		t.Fatal(err)
	}
	return st, a, b
}

func TestRenewByIssuerReadsNothingAndMatchesAFreshRegistry(t *testing.T) {
	ctx := context.Background()
	st, issuer, other := memoRegistries(t)
	is, err := issuer.Acquire(ctx, "w", wire.AcquireRequest{Resource: "memo/1", OperationID: "op", OperationClass: "c", RequestID: "r1", TTLMs: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	before := st.reads.Load()
	mine, err := issuer.Renew(ctx, "w", "memo/1", is.Grant.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.reads.Load() - before; n != 0 {
		t.Fatalf("the issuing registry read %d times to renew", n)
	}
	theirs, err := other.Renew(ctx, "w", "memo/1", is.Grant.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if mine.Grant.Digest() != is.Grant.Digest() || theirs.Grant.Digest() != is.Grant.Digest() {
		t.Fatalf("renewals changed the grant: backend revisions %d, %d, issued %d",
			mine.Grant.BackendRevision, theirs.Grant.BackendRevision, is.Grant.BackendRevision)
	}
	if mine.GrantProof != is.GrantProof || theirs.GrantProof != is.GrantProof {
		t.Fatal("a remembered grant proof differs from a fresh signature")
	}
}

func TestMemoOfAnotherBodyIsNotUsed(t *testing.T) {
	ctx := context.Background()
	_, issuer, _ := memoRegistries(t)
	is, err := issuer.Acquire(ctx, "w", wire.AcquireRequest{Resource: "memo/2", OperationID: "op", OperationClass: "c", RequestID: "r1", TTLMs: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	// Plant an entry under the same lease for a body that differs only in
	// its issue instant (a grant re-issued after a store went back), with
	// a wrong revision and proof.
	held, ok := registry.CachedHolder(issuer, "memo/2")
	if !ok {
		t.Fatal("no cached holder")
	}
	other := held
	other.IssuedAtMs++
	registry.PlantMemo(issuer, other, is.Grant.BackendRevision+100, is.Grant.Digest(), "forged")
	renewed, err := issuer.Renew(ctx, "w", "memo/2", is.Grant.Lease)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Grant.BackendRevision != is.Grant.BackendRevision || renewed.GrantProof != is.GrantProof {
		t.Fatalf("a memo of another body answered: revision %d (want %d), proof %q",
			renewed.Grant.BackendRevision, is.Grant.BackendRevision, renewed.GrantProof)
	}
	// The control: the same planted entry for the held body itself is
	// believed, which is why the body must match.
	registry.PlantMemo(issuer, held, is.Grant.BackendRevision+100, is.Grant.Digest(), "forged")
	if rev, ok := registry.MemoBackendRev(issuer, held); !ok || rev != is.Grant.BackendRevision+100 {
		t.Fatal("the memo ignores an entry for the held body")
	}
}
