package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/wire"
)

// RunRegistry runs registry scenarios over the store: two registries on
// one store never hold one resource twice, a lost commit response retried
// with the same request ID returns the same grant, waiters are served FIFO
// and a cancelled waiter leaves the queue; and the counting semaphore's
// rows (semaphore.go).
func RunRegistry(t *testing.T, newStore NewStore) {
	t.Run("TwoRegistriesNeverTwoHolders", func(t *testing.T) { testTwoRegistries(t, newStore(t)) })
	t.Run("LostResponseRetrySameGrant", func(t *testing.T) { testLostResponse(t, newStore(t)) })
	t.Run("WaitersServedFIFO", func(t *testing.T) { testFIFO(t, newStore(t)) })
	t.Run("CancelledWaiterLeavesQueue", func(t *testing.T) { testCancelWait(t, newStore(t)) })
	t.Run("BusyResourceEntrySwept", func(t *testing.T) { testBusyResourceSweep(t, newStore(t)) })
	t.Run("Release", func(t *testing.T) { RunRelease(t, newStore) })
	t.Run("SemaphoreNeverMoreThanNHolders", func(t *testing.T) { testSemaphoreHolders(t, newStore(t)) })
	t.Run("SemaphorePermitsMismatch", func(t *testing.T) { testSemaphoreMismatch(t, newStore(t)) })
	t.Run("SemaphoreWaitersServedFIFO", func(t *testing.T) { testSemaphoreFIFO(t, newStore(t)) })
}

// NewRegistry returns a registry over s with a fixed Ed25519 key, epoch 1,
// and the system clock unless clk is given.
func NewRegistry(t testing.TB, s registry.Store, clk clock.Clock) *registry.Registry {
	t.Helper()
	return NewRegistryWith(t, s, clk, false)
}

func acq(resource, id string, waitMs uint64) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: resource, OperationID: "op-" + id, OperationClass: "test", RequestID: id, TTLMs: 30_000, WaitMs: waitMs}
}

func testTwoRegistries(t *testing.T, s registry.Store) {
	testTwoRegistriesOf(t, []*registry.Registry{NewRegistry(t, s, nil), NewRegistry(t, s, nil)})
}

// testTwoRegistriesOf: workers on regs contend for one resource; never
// two holders at once, fences strictly rising.
func testTwoRegistriesOf(t *testing.T, regs []*registry.Registry) {
	const workers, rounds = 6, 8
	var (
		holders  atomic.Int32
		mu       sync.Mutex
		lastSeen uint64
		wg       sync.WaitGroup
		fail     = make(chan error, workers)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg, owner := regs[w%2], fmt.Sprintf("worker-%d", w)
			for i := 0; i < rounds; i++ {
				is, err := reg.Acquire(ctx, owner, acq("shared/1", fmt.Sprintf("%s-%d", owner, i), 20_000))
				if err != nil {
					fail <- fmt.Errorf("%w (releases lost %d, %d)", err, regs[0].ReleasesLost(), regs[1].ReleasesLost())
					return
				}
				if n := holders.Add(1); n != 1 {
					fail <- fmt.Errorf("%d holders at once", n)
				}
				mu.Lock()
				if is.Grant.FenceToken <= lastSeen {
					fail <- fmt.Errorf("fence %d after %d", is.Grant.FenceToken, lastSeen)
				}
				lastSeen = is.Grant.FenceToken
				mu.Unlock()
				holders.Add(-1)
				if err := reg.Release(ctx, owner, "shared/1", is.Grant.Lease); err != nil {
					fail <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
	if lastSeen != workers*rounds {
		t.Fatalf("last fence %d, want %d", lastSeen, workers*rounds)
	}
}

// lossy commits but reports a lost response once, when armed.
type lossy struct {
	registry.Store
	armed atomic.Bool
}

func (l *lossy) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	res, err := l.Store.Commit(ctx, w)
	if err == nil && res.OK && l.armed.CompareAndSwap(true, false) {
		return registry.CommitResult{}, errors.New("storetest: response lost after commit")
	}
	return res, err
}

func testLostResponse(t *testing.T, s registry.Store) {
	ls := &lossy{Store: s}
	reg := NewRegistry(t, ls, nil)
	ls.armed.Store(true)
	if _, err := reg.Acquire(ctx, "worker-a", acq("lost/1", "req-1", 0)); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("first acquire: want ErrUnavailable (outcome unknown), got %v", err)
	}
	// Another registry (the retry may land anywhere) sees the commit.
	other := NewRegistry(t, s, nil)
	q, err := other.QueryRequest(ctx, "worker-a", "req-1")
	if err != nil || q.Status.State != grant.StateHeld {
		t.Fatalf("query: %v %v", q.Status, err)
	}
	for _, r := range []*registry.Registry{reg, other} {
		again, err := r.Acquire(ctx, "worker-a", acq("lost/1", "req-1", 0))
		if err != nil {
			t.Fatal(err)
		}
		if again.Grant.Digest() != q.Grant.Digest() || again.Grant.FenceToken != 1 {
			t.Fatalf("retry issued another grant: fence %d", again.Grant.FenceToken)
		}
	}
	mismatch := acq("lost/1", "req-1", 0)
	mismatch.OperationClass = "other"
	if _, err := reg.Acquire(ctx, "worker-a", mismatch); !errors.Is(err, wire.ErrRequestMismatch) {
		t.Fatalf("changed parameters: %v", err)
	}
	if err := reg.Release(ctx, "worker-a", "lost/1", q.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	final, err := other.Acquire(ctx, "worker-a", acq("lost/1", "req-1", 0))
	if err != nil || final.Status.State != grant.StateReleased || final.Grant.Digest() != q.Grant.Digest() {
		t.Fatalf("retry after release: want the same grant RELEASED, got %v %v", final.Status, err)
	}
}

// waitQueued polls until resource has n waiters.
func waitQueued(t *testing.T, reg *registry.Registry, resource string, n int) {
	t.Helper()
	deadline := time.Now().Add(watchWaitMs * time.Millisecond)
	for time.Now().Before(deadline) {
		info, err := reg.Resource(ctx, resource)
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters == n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s never had %d waiters", resource, n)
}

func testFIFO(t *testing.T, s registry.Store) {
	regs := []*registry.Registry{NewRegistry(t, s, nil), NewRegistry(t, s, nil)}
	first, err := regs[0].Acquire(ctx, "holder", acq("fifo/1", "h", 0))
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 4
	got := make(chan string, waiters)
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		owner := fmt.Sprintf("waiter-%d", i)
		reg := regs[i%2]
		go func() {
			is, err := reg.Acquire(ctx, owner, acq("fifo/1", "w", 20_000))
			if err != nil {
				errs <- err
				return
			}
			got <- owner
			if err := reg.Release(ctx, owner, "fifo/1", is.Grant.Lease); err != nil {
				errs <- err
			}
		}()
		waitQueued(t, regs[0], "fifo/1", i+1)
	}
	if err := regs[0].Release(ctx, "holder", "fifo/1", first.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < waiters; i++ {
		select {
		case owner := <-got:
			if want := fmt.Sprintf("waiter-%d", i); owner != want {
				t.Fatalf("handoff %d went to %s, want %s", i, owner, want)
			}
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(watchWaitMs * time.Millisecond):
			t.Fatalf("handoff %d never happened", i)
		}
	}
}

func testCancelWait(t *testing.T, s registry.Store) {
	reg := NewRegistry(t, s, nil)
	if _, err := reg.Acquire(ctx, "holder", acq("cancel/1", "h", 0)); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := reg.Acquire(wctx, "waiter", acq("cancel/1", "w", 20_000))
		done <- err
	}()
	waitQueued(t, reg, "cancel/1", 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	waitQueued(t, reg, "cancel/1", 0)
	if _, err := reg.Acquire(ctx, "other", acq("cancel/1", "o", 0)); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("still held: want busy, got %v", err)
	}
}

// testBusyResourceSweep: the entry of a lease on a resource that never
// rests is swept within twice the retention after its first expiry (the
// sweep writes the end it places into the entry, which the store must
// take as an update compared on its revision), and not before the
// retention after its end.
func testBusyResourceSweep(t *testing.T, s registry.Store) {
	clk := fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC))
	reg := NewRegistry(t, s, clk)
	first, err := reg.Acquire(ctx, "worker-a", acq("busy/1", "first", 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Release(ctx, "worker-a", "busy/1", first.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	const step = 30 * time.Second // a cycle and a sweep each
	retention := time.Duration(reg.Config().RequestRetentionMs) * time.Millisecond
	issued := first.Grant.IssuedAt
	limit := issued.Add(time.Duration(first.Grant.TTLMs)*time.Millisecond + 2*retention + 2*step)
	for i := 0; ; i++ {
		is, err := reg.Acquire(ctx, "worker-b", acq("busy/1", fmt.Sprint("c-", i), 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Release(ctx, "worker-b", "busy/1", is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		clk.Advance(step)
		if _, err := reg.SweepRequests(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = reg.QueryRequest(ctx, "worker-a", "first")
		switch now := clk.Now(); {
		case errors.Is(err, wire.ErrNotFound) && now.Before(issued.Add(retention)):
			t.Fatalf("swept %v after its grant, before the retention", now.Sub(issued))
		case errors.Is(err, wire.ErrNotFound):
			return
		case err != nil:
			t.Fatal(err)
		case now.After(limit):
			t.Fatalf("not swept %v after its grant, on a resource that never rests; want within %v", now.Sub(issued), limit.Sub(issued))
		}
	}
}
