// This file proves the compare in compare-and-swap is what keeps two
// registries from both granting: with a store that commits blindly (last
// writer wins, as a read-modify-write lock service without fencing does),
// the same scenario hands out one fence twice, and the check catches it.
package registry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// blindStore rewrites every compare to match the store, so every commit
// succeeds over whatever is there.
type blindStore struct{ registry.Store }

func (b blindStore) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	var keys []lockstate.RequestKey
	for _, rw := range w.Requests {
		keys = append(keys, rw.Key)
	}
	cur, err := b.Store.Read(ctx, w.Resource, keys)
	if err != nil {
		return registry.CommitResult{}, err
	}
	w.RecordRev, w.SettingsRev = cur.RecordRev, cur.SettingsRev
	for i := range w.Requests {
		w.Requests[i].ModRev = cur.Requests[i].ModRev // Read answers one slot per key, in order
	}
	return b.Store.Commit(ctx, w)
}

// staleReplicaRace: replica A looks at the resource, replica B takes it,
// then A acquires from what it saw. Returns both fences, or A's error.
func staleReplicaRace(t *testing.T, blind bool) (uint64, uint64, error) {
	e := newEnv(t, nil)
	var storeA registry.Store = e.store
	if blind {
		storeA = blindStore{e.store}
	}
	k, _ := testKey(t)
	regA, err := registry.New(storeA, e.reg.Config(), e.clock, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regA.Resource(e.ctx, "inv/1"); err != nil { // A sees it free
		t.Fatal(err)
	}
	b := e.mustAcquire("worker-b", req("inv/1", "b1")) // B, through the other replica
	a, err := regA.Acquire(e.ctx, "worker-a", req("inv/1", "a1"))
	if err != nil {
		return b.Grant.FenceToken, 0, err
	}
	return b.Grant.FenceToken, a.Grant.FenceToken, nil
}

func TestStaleReplicaIsRefusedByCompare(t *testing.T) {
	if _, _, err := staleReplicaRace(t, false); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("stale replica: want ErrBusy, got %v", err)
	}
}

func TestBlindStoreHandsOutAFenceTwice(t *testing.T) {
	fb, fa, err := staleReplicaRace(t, true)
	if err != nil {
		t.Fatalf("blind store refused: %v", err)
	}
	if fa != fb {
		t.Fatalf("blind store: fences %d and %d; the race should have reused one", fb, fa)
	}
}
