package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// The semaphore rows (RunRegistry): the registry's counting semaphore
// over each store, as the exclusive lock's rows above. Each permit is a
// grant on one slot, an ordinary resource: two registries on one store
// never have more than N holders of a semaphore, never two holders of one
// slot, and each slot's fences only grow; the limit N is recorded with the
// semaphore (another N, or a plain lock of its name, is
// PERMITS_MISMATCH); waiters are served in FIFO order.

func semAcq(name, id string, permits, waitMs uint64) wire.AcquireRequest {
	r := acq(name, id, waitMs)
	r.Permits = permits
	return r
}

func testSemaphoreHolders(t *testing.T, s registry.Store) {
	regs := []*registry.Registry{NewRegistry(t, s, nil), NewRegistry(t, s, nil)}
	const permits, workers, rounds = 3, 6, 6
	var (
		mu      sync.Mutex
		holding = map[string]string{} // slot → owner
		fences  = map[string]uint64{} // slot → last fence seen
		most    int
		wg      sync.WaitGroup
		fail    = make(chan error, workers*rounds)
	)
	for w := range workers {
		wg.Go(func() {
			reg, owner := regs[w%2], fmt.Sprintf("worker-%d", w)
			for i := range rounds {
				is, err := reg.Acquire(ctx, owner, semAcq("sem/holders", fmt.Sprintf("%s-%d", owner, i), permits, 20_000))
				if err != nil {
					fail <- err
					return
				}
				slot := is.Grant.Resource
				mu.Lock()
				if other, ok := holding[slot]; ok {
					fail <- fmt.Errorf("slot %s held by %s and %s", slot, other, owner)
				}
				if is.Grant.FenceToken <= fences[slot] {
					fail <- fmt.Errorf("slot %s: fence %d after %d", slot, is.Grant.FenceToken, fences[slot])
				}
				holding[slot], fences[slot] = owner, is.Grant.FenceToken
				most = max(most, len(holding))
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				delete(holding, slot)
				mu.Unlock()
				if err := reg.Release(ctx, owner, slot, is.Grant.Lease); err != nil {
					fail <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
	if most > permits || len(fences) > permits {
		t.Fatalf("%d holders at once over %d slots, permits %d", most, len(fences), permits)
	}
	for slot := range fences {
		if name, i, ok := wire.SlotOf(slot); !ok || name != "sem/holders" || i >= permits {
			t.Fatalf("a permit on %s, not a slot of sem/holders", slot)
		}
	}
}

func testSemaphoreMismatch(t *testing.T, s registry.Store) {
	reg := NewRegistry(t, s, nil)
	if _, err := reg.Acquire(ctx, "a", semAcq("sem/n", "a1", 2, 0)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []wire.AcquireRequest{semAcq("sem/n", "b1", 3, 0), semAcq("sem/n", "b2", 0, 0)} {
		if _, err := reg.Acquire(ctx, "b", r); !errors.Is(err, wire.ErrPermitsMismatch) {
			t.Fatalf("permits %d on a semaphore of 2: %v, want PERMITS_MISMATCH", r.Permits, err)
		}
	}
	if _, err := reg.Acquire(ctx, "a", acq("sem/plain", "p1", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Acquire(ctx, "b", semAcq("sem/plain", "b3", 2, 0)); !errors.Is(err, wire.ErrPermitsMismatch) {
		t.Fatalf("a semaphore over a plain lock: %v, want PERMITS_MISMATCH", err)
	}
}

func testSemaphoreFIFO(t *testing.T, s registry.Store) {
	regs := []*registry.Registry{NewRegistry(t, s, nil), NewRegistry(t, s, nil)}
	const permits, waiters = 2, 4
	var held []wire.Issued
	for i := range permits {
		is, err := regs[0].Acquire(ctx, "holder", semAcq("sem/fifo", fmt.Sprintf("h%d", i), permits, 0))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, is)
	}
	got := make(chan wire.Issued, waiters)
	who := make(chan string, waiters)
	errs := make(chan error, waiters)
	for i := range waiters {
		owner := fmt.Sprintf("waiter-%d", i)
		reg := regs[i%2]
		go func() {
			is, err := reg.Acquire(ctx, owner, semAcq("sem/fifo", "w", permits, 20_000))
			if err != nil {
				errs <- err
				return
			}
			who <- owner
			got <- is
		}()
		waitQueued(t, regs[0], "sem/fifo", i+1)
	}
	release := func(reg *registry.Registry, owner string, is wire.Issued) {
		t.Helper()
		if err := reg.Release(ctx, owner, is.Grant.Resource, is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	release(regs[0], "holder", held[0])
	for i := range waiters {
		select {
		case owner := <-who:
			is := <-got
			if want := fmt.Sprintf("waiter-%d", i); owner != want {
				t.Fatalf("permit %d went to %s, want %s", i, owner, want)
			}
			release(regs[i%2], owner, is)
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(watchWaitMs * time.Millisecond):
			t.Fatalf("permit %d never handed over", i)
		}
	}
	release(regs[0], "holder", held[1])
}
