// This file proves that a registry replica never commits a decision made
// on a record it cached before its ZooKeeper server was restored from an
// older copy of its data directory (the story of registry/restore_test.go,
// on a real server): a standalone ZooKeeper restored from a backup hands
// its zxids out again, to other contents, so a commit must compare the
// contents the decision read (Write.RecordWas), not the revision alone.
// Replica A caches the free record; the server is restored to before
// that; replica B takes the resource and renews until the record's
// revision reaches the one A cached; A's acquire must answer BUSY.
package zkstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/testkit/zktest"
	"github.com/fencegate/fencegate/wire"
)

func TestRestoredServerDoesNotReviveACachedRecord(t *testing.T) {
	t.Parallel()
	server(t)                                // skips like the others without ZooKeeper
	srv := zktest.Start(t, zktest.Options{}) // its own: it is stopped and restored
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := func() *Store { return openStore(t, ctx, []string{srv.Addr}) }
	storeA := open()
	a := storetest.NewRegistry(t, storeA, nil)
	cycle(t, ctx, a, "worker-a", "a-1")
	backup := t.TempDir()
	stopped(t, srv, func() { copyTree(t, srv.DataDir(), backup) })
	// Other commits first, so that the revision A caches is one the
	// restored server reaches again after B's first grant.
	pad(t, ctx, storeA)
	cycle(t, ctx, a, "worker-a", "a-2") // A caches the free record at fence 2
	cached, err := storeA.Read(ctx, "restore/x", nil)
	if err != nil || cached.Record.HighestFence != 2 {
		t.Fatalf("before the restore: %+v %v", cached.Record, err)
	}
	zxidBefore, err := srv.Zxid()
	if err != nil {
		t.Fatal(err)
	}
	stopped(t, srv, func() {
		if err := os.RemoveAll(srv.DataDir()); err != nil {
			t.Fatal(err)
		}
		copyTree(t, backup, srv.DataDir())
	})

	storeB := open()
	restored, err := storeB.Read(ctx, "restore/x", nil)
	if err != nil || restored.Record.HighestFence != 1 {
		t.Fatalf("after the restore: %+v %v, want the backup's record (fence 1)", restored.Record, err)
	}
	b := storetest.NewRegistry(t, storeB, nil)
	held, err := b.Acquire(ctx, "worker-b", acquireReq("b-1"))
	if err != nil {
		t.Fatal(err)
	}
	renewUntil(t, ctx, srv, b, storeB, held, cached.RecordRev, zxidBefore)
	if got, err := acquireEventually(ctx, a, "worker-a", "a-3"); err == nil {
		t.Fatalf("replica A granted fence %d while B holds fence %d: it committed on the record it cached before the restore",
			got.Grant.FenceToken, held.Grant.FenceToken)
	} else if !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("A's acquire: %v, want BUSY (B holds the resource)", err)
	}
	if info, err := a.Resource(ctx, "restore/x"); err != nil || info.HolderOwner != "worker-b" {
		t.Fatalf("holder %q (%v), want worker-b", info.HolderOwner, err)
	}
}

// pad commits restorePadCommits request entries through s, retrying
// while its client reconnects after a restart.
func pad(t *testing.T, ctx context.Context, s *Store) {
	t.Helper()
	for i := range restorePadCommits {
		w := registry.Write{Requests: []registry.RequestWrite{{Key: lockstate.RequestKey{Owner: "pad", RequestID: fmt.Sprint(i)}, Entry: padEntry}}}
		for {
			res, err := s.Commit(ctx, w) // blind: a retry after an unknown outcome is harmless
			if err == nil && res.OK {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("pad commit: %+v %v", res, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// renewUntil renews held until the record is back at (or past) the
// revision A cached and the server past every zxid A saw (until then
// ZooKeeper refuses A's reconnection: it will not serve a client an older
// state than it saw).
func renewUntil(t *testing.T, ctx context.Context, srv *zktest.Server, b *registry.Registry, s *Store, held wire.Issued, cachedRev, zxidBefore uint64) {
	t.Helper()
	for range 200 {
		snap, err := s.Read(ctx, "restore/x", nil)
		zxid, zerr := srv.Zxid()
		if err != nil || zerr != nil {
			t.Fatal(err, zerr)
		}
		if snap.RecordRev >= cachedRev && zxid >= zxidBefore {
			t.Logf("record at revision %d after the restore, A cached %d (same revision: %v)", snap.RecordRev, cachedRev, snap.RecordRev == cachedRev)
			return
		}
		if _, err := b.Renew(ctx, "worker-b", "restore/x", held.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("the restored server never reached zxid %d", zxidBefore)
}

// acquireEventually acquires, retrying while the store is unavailable
// (its client reconnecting).
func acquireEventually(ctx context.Context, reg *registry.Registry, owner, id string) (wire.Issued, error) {
	for {
		is, err := reg.Acquire(ctx, owner, acquireReq(id))
		if !errors.Is(err, wire.ErrUnavailable) || ctx.Err() != nil {
			return is, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// restorePadCommits puts the revision A caches past the transactions the
// restored server spends on sessions and on B's first grant.
const restorePadCommits = 20

var padEntry = &lockstate.RequestEntry{Grant: lockstate.GrantBody{Resource: "pad", Owner: "pad"}, ParamsDigest: "p", State: grant.StateReleased}

func acquireReq(id string) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: "restore/x", OperationID: "op-" + id, OperationClass: "test", RequestID: id, TTLMs: 30_000}
}

func cycle(t *testing.T, ctx context.Context, reg *registry.Registry, owner, id string) {
	t.Helper()
	is, err := acquireEventually(ctx, reg, owner, id)
	if err != nil {
		t.Fatal(err)
	}
	if is.Status != nil && is.Status.State != grant.StateHeld { // a fresh grant says HELD itself
		t.Fatalf("acquire %s: %s", id, is.Status.State)
	}
	if err := reg.Release(ctx, owner, "restore/x", is.Grant.Lease); err != nil {
		t.Fatal(err)
	}
}

// stopped runs f with the server stopped, then starts it again.
func stopped(t *testing.T, srv *zktest.Server, f func()) {
	t.Helper()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	f()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
