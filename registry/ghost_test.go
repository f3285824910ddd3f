// This file proves, in virtual time (testing/synctest, real waiters on the
// registry's own timers and store watches), that a retried request ID that
// already has an answer is answered from its entry before any queue
// action: one store round trip, no wait, and the resource's queue never
// grows; and that the waiters of callers that vanish leave the queue, so
// it drains to no ghosts. Without the entry compare on the queue join,
// the retry queued a ticket behind the live waiters and waited for it.
package registry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

// watchingStore counts round trips and remembers the longest queue any
// committed record of the resource had.
type watchingStore struct {
	registry.Store
	mu         sync.Mutex
	calls      int
	waitersMax int
	commitsMax int // when > 0, commits fail after this many (a runaway loop ends instead of hanging the test)
	commits    int
}

func (s *watchingStore) Read(ctx context.Context, res string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.Store.Read(ctx, res, keys)
}

func (s *watchingStore) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	s.mu.Lock()
	s.commits++
	runaway := s.commitsMax > 0 && s.commits > s.commitsMax
	s.mu.Unlock()
	if runaway {
		return registry.CommitResult{}, errors.New("watchingStore: commit limit reached: a runaway loop")
	}
	res, err := s.Store.Commit(ctx, w)
	s.mu.Lock()
	s.calls++
	if err == nil && res.OK && w.Record != nil {
		s.waitersMax = max(s.waitersMax, len(w.Record.Waiters))
	}
	s.mu.Unlock()
	return res, err
}

func (s *watchingStore) snapshot() (calls, waitersMax int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.waitersMax
}

func (s *watchingStore) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls, s.waitersMax = 0, 0
}

func probeRequest(id string, waitMs uint64) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: "probe/x", OperationID: "op-" + id, OperationClass: "settle",
		RequestID: id, TTLMs: 10_000, WaitMs: waitMs}
}

func TestRetryOfAnsweredRequestNeverQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		k, _ := testKey(t)
		store := &watchingStore{Store: memstore.New()}
		reg, err := registry.New(store, registry.DefaultConfig(epoch), clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		old, err := reg.Acquire(ctx, "worker-w1", probeRequest("old-1", 2500))
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Release(ctx, "worker-w1", "probe/x", old.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Acquire(ctx, "worker-w2", probeRequest("w2-1", 0)); err != nil {
			t.Fatal(err)
		}
		var waiters sync.WaitGroup
		defer waiters.Wait()
		for _, who := range []string{"worker-w3", "worker-w4"} {
			waiters.Go(func() { _, _ = reg.Acquire(ctx, who, probeRequest(who+"-1", 2000)) }) // they wait, then time out
		}
		synctest.Wait()
		if info, _ := reg.Resource(ctx, "probe/x"); info.Waiters != 2 {
			t.Fatalf("%d waiters, want 2", info.Waiters)
		}
		store.reset()
		start := time.Now()
		again, err := reg.Acquire(ctx, "worker-w1", probeRequest("old-1", 2500))
		if err != nil || again.Grant.Digest() != old.Grant.Digest() || again.Status.State != grant.StateReleased {
			t.Fatalf("retry of old-1: %v, want the released grant", err)
		}
		calls, waitersMax := store.snapshot()
		if took := time.Since(start); took != 0 || calls > 2 || waitersMax > 2 {
			t.Fatalf("retry took %s of virtual time and %d store calls; the queue reached %d waiters (want 0 s, ≤ 2 calls, 2 waiters)",
				took, calls, waitersMax)
		}
		synctest.Wait()
		if info, _ := reg.Resource(ctx, "probe/x"); info.Waiters != 2 {
			t.Fatalf("%d waiters after the retry, want 2", info.Waiters)
		}
	})
}

// TestVanishedWaitersDrain: waiters whose callers vanish (a replica
// killed mid-wait: nobody withdraws their tickets) leave the queue
// together once a free resource's claim window passes, instead of one
// window each; the live waiter behind them is served within one window of
// the resource becoming free. (A release would instead hand the lease to
// the head ghost in its own write, which then holds it until its TTL runs
// out, like any crashed holder; this test lets the holder expire.)
func TestVanishedWaitersDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		k, _ := testKey(t)
		store := memstore.New()
		cfg := registry.DefaultConfig(epoch)
		dead, err := registry.New(store, cfg, clock.System{}, k) // the replica that will be killed
		if err != nil {
			t.Fatal(err)
		}
		holder, err := dead.Acquire(ctx, "worker-h", probeRequest("h-1", 0))
		if err != nil {
			t.Fatal(err)
		}
		// Five waiters queue through the doomed replica; each Step commits
		// its ticket, and then the process is gone: nobody steps again,
		// nobody cancels.
		for i := range 5 {
			a, err := dead.StartAcquire("worker-g", probeRequest("g-"+string(rune('a'+i)), 30_000))
			if err != nil {
				t.Fatal(err)
			}
			if a.Step(ctx, false) || !a.Queued() {
				t.Fatalf("ghost %d was not queued", i)
			}
		}
		time.Sleep(time.Second)
		live, err := registry.New(store, cfg, clock.System{}, k) // the replica that stays
		if err != nil {
			t.Fatal(err)
		}
		got, err := live.Acquire(ctx, "worker-n", probeRequest("n-1", 30_000))
		if err != nil {
			t.Fatalf("a live waiter behind 5 ghosts: %v", err)
		}
		freeAt := holder.Grant.ExpiresAt.Add(time.Duration(cfg.LockDelayMs) * time.Millisecond)
		waited := time.Since(freeAt)
		if info, _ := live.Resource(ctx, "probe/x"); info.Waiters != 0 || info.HolderOwner != "worker-n" {
			t.Fatalf("queue %d (want 0), holder %s", info.Waiters, info.HolderOwner)
		}
		// One claim window (and a poll) for all five ghosts, not one each.
		if bound := time.Duration(cfg.HandoffClaimMs+cfg.WaitPollMsMax) * time.Millisecond; waited > bound {
			t.Fatalf("served %s after the resource became free, bound %s", waited, bound)
		}
		t.Logf("served fence %d %s after the resource became free, behind 5 ghosts", got.Grant.FenceToken, waited)
	})
}

// TestWarmRetryAfterExpiryNeverQueues: a client whose lease expired
// without any commit recording it (it crashed, say) retries its request ID
// through a replica that has the record cached. Acquire decides its first
// step on the cache, which assumes request entries absent; the decision
// used to end the expired lease (writing the request's entry EXPIRED) and
// queue a ticket for the same request in one write: a ghost waiter that
// kept its place until its deadline. The simulator found it once its
// driver decided first steps on the cache as Acquire does.
func TestWarmRetryAfterExpiryNeverQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		k, _ := testKey(t)
		store := &watchingStore{Store: memstore.New()}
		reg, err := registry.New(store, registry.DefaultConfig(epoch), clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		first, err := reg.Acquire(ctx, "worker-w1", probeRequest("w1-1", 0))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(11 * time.Second) // past its 10 s TTL; no commit records the expiry
		a, err := reg.StartAcquire("worker-w1", probeRequest("w1-1", 5000))
		if err != nil {
			t.Fatal(err)
		}
		if !a.Step(ctx, true) || a.Queued() {
			t.Fatal("the retry of an expired request was queued")
		}
		again, err := a.Result()
		if err != nil || again.Grant.Digest() != first.Grant.Digest() || again.Status.State != grant.StateExpired {
			t.Fatalf("retry of w1-1: %v %v, want the expired grant", again.Status, err)
		}
		if _, waitersMax := store.snapshot(); waitersMax != 0 {
			t.Fatalf("a committed record queued %d waiters", waitersMax)
		}
	})
}
