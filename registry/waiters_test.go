// This file proves the waiting acquire's shell in virtual time
// (testing/synctest: Acquire's own goroutines, store watches and timers on
// the registry's clock): eight waiters are served in FIFO order, each the
// instant its predecessor releases (a warm handoff in the release's own
// write); and two concurrent calls of one request ID converge instead of
// rewriting their shared ticket forever.
package registry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
)

func TestEightWaitersHandoffInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		k, _ := testKey(t)
		reg, err := registry.New(memstore.New(), registry.DefaultConfig(epoch), clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		first, err := reg.Acquire(ctx, "holder", probeRequest("h-0", 0))
		if err != nil {
			t.Fatal(err)
		}
		const waiters = 8
		type served struct {
			who   int
			fence uint64
			at    time.Time
		}
		got := make(chan served, waiters)
		var wg sync.WaitGroup
		for i := range waiters {
			wg.Go(func() {
				owner := fmt.Sprintf("waiter-%d", i)
				is, err := reg.Acquire(ctx, owner, probeRequest(owner, 20_000))
				if err != nil {
					t.Errorf("%s: %v", owner, err)
					return
				}
				got <- served{i, is.Grant.FenceToken, time.Now()}
				time.Sleep(100 * time.Millisecond) // work, then hand over
				if err := reg.Release(ctx, owner, "probe/x", is.Grant.Lease); err != nil {
					t.Errorf("%s release: %v", owner, err)
				}
			})
			synctest.Wait() // each waiter queues before the next arrives: FIFO order is i
		}
		released := time.Now()
		if err := reg.Release(ctx, "holder", "probe/x", first.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(got)
		prev := served{who: -1, fence: first.Grant.FenceToken, at: released}
		for s := range got {
			if s.who != prev.who+1 || s.fence != prev.fence+1 {
				t.Fatalf("waiter %d (fence %d) served after waiter %d (fence %d): not FIFO", s.who, s.fence, prev.who, prev.fence)
			}
			wait := s.at.Sub(prev.at)
			if prev.who >= 0 {
				wait -= 100 * time.Millisecond // the predecessor's work
			}
			if wait != 0 {
				t.Fatalf("waiter %d was served %s after its predecessor let go, want at once (warm handoff)", s.who, wait)
			}
			prev = s
		}
		if prev.who != waiters-1 {
			t.Fatalf("only %d of %d waiters served", prev.who+1, waiters)
		}
	})
}

func TestDuplicateCallsOfOneRequestConverge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		k, _ := testKey(t)
		store := &watchingStore{Store: memstore.New(), commitsMax: 200}
		reg, err := registry.New(store, registry.DefaultConfig(epoch), clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		holder, err := reg.Acquire(ctx, "holder", probeRequest("h-1", 0))
		if err != nil {
			t.Fatal(err)
		}
		// The same request arrives twice (a duplicated message), the second
		// a little later and so with a later deadline.
		var wg sync.WaitGroup
		answers := make(chan uint64, 2)
		for i := range 2 {
			wg.Go(func() {
				is, err := reg.Acquire(ctx, "worker-w", probeRequest("w-1", 10_000))
				if err != nil {
					t.Errorf("call %d: %v (the calls rewrote their ticket until the store's commit limit)", i, err)
					return
				}
				answers <- is.Grant.FenceToken
			})
			time.Sleep(10 * time.Millisecond)
		}
		synctest.Wait()
		store.reset()
		time.Sleep(3 * time.Second) // polls and watch events while both wait
		synctest.Wait()
		if calls, _ := store.snapshot(); calls > 20 {
			t.Fatalf("%d store calls in 3 s of waiting: the two calls rewrite their ticket", calls)
		}
		if err := reg.Release(ctx, "holder", "probe/x", holder.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(answers)
		var fences []uint64
		for f := range answers {
			fences = append(fences, f)
		}
		if len(fences) != 2 || fences[0] != fences[1] {
			t.Fatalf("the two calls answered fences %v, want one grant for both", fences)
		}
	})
}
