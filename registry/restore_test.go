// This file proves that a registry replica never commits a decision made
// on a record it cached before the store was restored to an older state:
// after a restore the store hands the same revisions out again, to other
// contents, so the compare must cover the contents the decision read
// (Write.RecordWas), not the revision alone. Without it (the defect the
// chaos suite found on a real etcd restore), replica A, whose cache still
// held the pre-restore record at the revision the restored store reached,
// granted a second lease while replica B's was live.
package registry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

func TestRestoreDoesNotReviveACachedRecord(t *testing.T) {
	ctx := context.Background()
	k, _ := testKey(t)
	store := memstore.New()
	cfg := registry.DefaultConfig(epoch)
	a, err := registry.New(store, cfg, clock.System{}, k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := registry.New(store, cfg, clock.System{}, k)
	if err != nil {
		t.Fatal(err)
	}
	cycle := func(reg *registry.Registry, owner, id string) {
		t.Helper()
		is, err := reg.Acquire(ctx, owner, probeRequest(id, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Release(ctx, owner, is.Grant.Resource, is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	cycle(a, "worker-a", "a-1")
	backup := store.Image()     // the snapshot an operator will restore
	cycle(a, "worker-a", "a-2") // A caches the free record, fence 2, two revisions on
	store.Restore(backup, memstore.ReuseRevisions)

	// After the restore, B takes the resource and renews: two commits, so
	// the record's revision is again the one A cached, with B holding it.
	held, err := b.Acquire(ctx, "worker-b", probeRequest("b-1", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Renew(ctx, "worker-b", held.Grant.Resource, held.Grant.Lease); err != nil {
		t.Fatal(err)
	}

	got, err := a.Acquire(ctx, "worker-a", probeRequest("a-3", 0))
	if err == nil {
		t.Fatalf("replica A granted fence %d while B holds fence %d: it committed on the record it cached before the restore",
			got.Grant.FenceToken, held.Grant.FenceToken)
	}
	if !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("A's acquire: %v, want BUSY (B holds the resource)", err)
	}
	info, err := a.Resource(ctx, "probe/x")
	if err != nil {
		t.Fatal(err)
	}
	if info.HolderOwner != "worker-b" {
		t.Fatalf("holder %q, want worker-b", info.HolderOwner)
	}
}

// TestRestoreRefreshesTheCache: right after a restore the store's
// revision is below the one replica A cached. A's first call pays one
// failed compare and brings the restored record; from then on the cache
// holds it, so the next acquire and release are one round trip each again
// instead of a failed compare each until the store's revisions pass the
// cached one.
func TestRestoreRefreshesTheCache(t *testing.T) {
	ctx := context.Background()
	k, _ := testKey(t)
	mem := memstore.New()
	store := &watchingStore{Store: mem}
	a, err := registry.New(store, registry.DefaultConfig(epoch), clock.System{}, k)
	if err != nil {
		t.Fatal(err)
	}
	cycle := func(id string) {
		t.Helper()
		is, err := a.Acquire(ctx, "worker-a", probeRequest(id, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Release(ctx, "worker-a", is.Grant.Resource, is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	cycle("a-1")
	backup := mem.Image()
	for i := range 5 {
		cycle("a-" + string(rune('2'+i))) // the cache runs ten revisions ahead of the backup
	}
	mem.Restore(backup, memstore.ReuseRevisions)
	cycle("a-after-1") // pays for the restore
	store.reset()
	cycle("a-after-2")
	if calls, _ := store.snapshot(); calls != 2 {
		t.Fatalf("acquire+release after the cache caught up took %d round trips, want 2", calls)
	}
}
