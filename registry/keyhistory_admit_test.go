// Proves AdmitGateKeys keeps the key history in the store: a second
// registry on the same store (a replica, or the same serve restarted)
// refuses the second step of the two-step resurrection that the first
// took; and two registries admitting conflicting gate keys at once never
// both succeed. Negative controls: a registry on a store of its own has
// no history to refuse with, and over a store whose key-history commit
// ignores what it was decided on (a blind write), both conflicting loads
// succeed.
package registry_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
)

var (
	issue43F1 = []registry.GateKeyUse{use("gk-1", "one", grant.KeyRetired), use("gk-2", "two", grant.KeyActive)}
	issue43F2 = []registry.GateKeyUse{use("gk-2", "two", grant.KeyActive)}
	issue43F3 = []registry.GateKeyUse{use("gk-1", "another", grant.KeyActive), use("gk-2", "two", grant.KeyVerifyOnly)}
)

func TestKeyHistoryIsTheStoresAcrossRegistries(t *testing.T) {
	ctx := context.Background()
	shared := memstore.New()
	for i, f := range [][]registry.GateKeyUse{issue43F1, issue43F2} {
		if _, err := registry.AdmitGateKeys(ctx, shared, f); err != nil {
			t.Fatalf("replica A, file %d: %v", i+1, err)
		}
	}
	// Replica B (or A restarted) brings gk-1 back: refused, nothing written.
	before, _ := shared.ReadKeyHistory(ctx)
	if _, err := registry.AdmitGateKeys(ctx, shared, issue43F3); !errors.Is(err, registry.ErrKeyReused) {
		t.Fatalf("replica B brings gk-1 back: %v", err)
	}
	if after, _ := shared.ReadKeyHistory(ctx); after.ModRev != before.ModRev {
		t.Fatal("a refused admission wrote the history")
	}
	// Negative control: a registry with a store of its own admits it.
	if _, err := registry.AdmitGateKeys(ctx, memstore.New(), issue43F3); err != nil {
		t.Fatalf("negative control: a fresh store refused: %v", err)
	}
	// Admitting what the history already holds writes nothing.
	again, err := registry.AdmitGateKeys(ctx, shared, issue43F2)
	if err != nil || again.Changed {
		t.Fatalf("the same file again: %+v %v", again, err)
	}
}

// blindKeys is a store whose key-history commit is a blind write: it
// names whatever the store holds as what it was decided on.
type blindKeys struct{ *memstore.Store }

func (s blindKeys) CommitKeyHistory(ctx context.Context, w registry.KeyHistoryWrite) (registry.KeyHistoryResult, error) {
	cur, err := s.Store.ReadKeyHistory(ctx)
	if err != nil {
		return registry.KeyHistoryResult{}, err
	}
	w.WasRaw = cur.Raw
	return s.Store.CommitKeyHistory(ctx, w)
}

// raceConflicting has two replicas, both with F1 in force, load
// conflicting files at once: A drops gk-1 and adds gk-3; B adds gk-3 with
// another secret. Both read the history before either writes (the
// first read of each waits for the other's).
// It returns how many succeeded.
func raceConflicting(t *testing.T, store registry.Store) int {
	ctx := context.Background()
	if _, err := registry.AdmitGateKeys(ctx, store, issue43F1); err != nil {
		t.Fatal(err)
	}
	a := []registry.GateKeyUse{use("gk-3", "three", grant.KeyActive), use("gk-2", "two", grant.KeyVerifyOnly)}
	b := []registry.GateKeyUse{use("gk-3", "three'", grant.KeyActive), use("gk-1", "one", grant.KeyRetired), use("gk-2", "two", grant.KeyVerifyOnly)}
	var reads sync.WaitGroup
	reads.Add(2)
	gated := &readGate{Store: store, reads: &reads}
	var wg sync.WaitGroup
	results := make([]error, 2)
	for i, f := range [][]registry.GateKeyUse{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = registry.AdmitGateKeys(ctx, gated, f)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, registry.ErrKeyReused):
			t.Fatal(err)
		}
	}
	return ok
}

// readGate holds each first ReadKeyHistory until both racers have made
// theirs, so both decide on the same history.
type readGate struct {
	registry.Store
	reads *sync.WaitGroup
	mu    sync.Mutex
	seen  int
}

func (g *readGate) ReadKeyHistory(ctx context.Context) (registry.KeyHistorySlot, error) {
	slot, err := g.Store.ReadKeyHistory(ctx)
	g.mu.Lock()
	g.seen++
	first := g.seen <= 2
	g.mu.Unlock()
	if first {
		g.reads.Done()
		g.reads.Wait()
	}
	return slot, err
}

func TestConflictingLoadsAtOnceNeverBothSucceed(t *testing.T) {
	if n := raceConflicting(t, memstore.New()); n != 1 {
		t.Fatalf("%d of two conflicting loads succeeded, want exactly 1", n)
	}
	// Negative control: with a blind write both succeed, and the history
	// ends as the last writer left it.
	if n := raceConflicting(t, blindKeys{memstore.New()}); n != 2 {
		t.Fatalf("negative control: %d of two conflicting loads succeeded over a blind write, want 2", n)
	}
}
