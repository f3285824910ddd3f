// This file proves what `fencegate serve` relies on with etcd: a restart on
// the same data dir keeps every grant, fence and request ID (the next fence
// is higher), and two replicas with their own etcd clients on one etcd
// never hold one resource twice while fences strictly increase.
package etcdstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

func acquireReq(resource, id string, waitMs uint64) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: resource, OperationID: "op-" + id, OperationClass: "test", RequestID: id, TTLMs: 60_000, WaitMs: waitMs}
}

func TestRestartKeepsGrantsFencesAndRequestIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	start := func() (*Embedded, *registry.Registry, func()) {
		e, err := StartEmbedded(ctx, dir, EmbeddedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Client()
		if err != nil {
			t.Fatal(err)
		}
		return e, storetest.NewRegistry(t, New(c, ""), nil), func() { c.Close(); e.Close() }
	}
	_, reg, stop := start()
	a, err := reg.Acquire(ctx, "worker-a", acquireReq("restart/1", "a1", 0))
	if err != nil {
		t.Fatal(err)
	}
	stop()

	_, reg, stop = start()
	defer stop()
	q, err := reg.QueryRequest(ctx, "worker-a", "a1")
	if err != nil || q.Grant.Digest() != a.Grant.Digest() || q.Status.State != grant.StateHeld {
		t.Fatalf("after restart the grant is gone or changed: %v", err)
	}
	if err := reg.Release(ctx, "worker-a", "restart/1", a.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	b, err := reg.Acquire(ctx, "worker-b", acquireReq("restart/1", "b1", 0))
	if err != nil {
		t.Fatal(err)
	}
	if b.Grant.FenceToken <= a.Grant.FenceToken || b.Grant.BackendRevision <= a.Grant.BackendRevision {
		t.Fatalf("after restart: fence %d rev %d not above %d rev %d",
			b.Grant.FenceToken, b.Grant.BackendRevision, a.Grant.FenceToken, a.Grant.BackendRevision)
	}
}

func TestTwoReplicasOwnClients(t *testing.T) {
	ctx := context.Background()
	prefix := fmt.Sprintf("/replicas-%d/", prefixSeq.Add(1))
	var regs []*registry.Registry
	for i := 0; i < 2; i++ {
		c, err := testEtcd.Client()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		regs = append(regs, storetest.NewRegistry(t, New(c, prefix), nil))
	}
	const workers, rounds = 8, 10
	var (
		holders atomic.Int32
		mu      sync.Mutex
		fences  []uint64
		wg      sync.WaitGroup
		errs    = make(chan error, workers*rounds)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg, owner := regs[w%2], fmt.Sprintf("worker-%d", w)
			for i := 0; i < rounds; i++ {
				// Half the workers wait in the queue, half retry on BUSY.
				is, err := reg.Acquire(ctx, owner, acquireReq("hot/1", fmt.Sprint(owner, "-", i), uint64(w%2)*30_000))
				if err != nil {
					if wire.CodeOf(err) == "BUSY" {
						i--
						continue
					}
					errs <- err
					return
				}
				if n := holders.Add(1); n != 1 {
					errs <- fmt.Errorf("%d HELD grants at once", n)
				}
				mu.Lock()
				fences = append(fences, is.Grant.FenceToken)
				mu.Unlock()
				holders.Add(-1)
				if err := reg.Release(ctx, owner, "hot/1", is.Grant.Lease); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d after %d", fences[i], fences[i-1])
		}
	}
	if len(fences) != workers*rounds {
		t.Fatalf("%d grants, want %d", len(fences), workers*rounds)
	}
}
