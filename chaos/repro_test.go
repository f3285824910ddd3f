// Proves the lease-exclusivity defect the chaos suite's porcupine check
// found stays fixed, in process and step by step: a queued acquire whose
// caller gave up withdraws its ticket with the request's key, and a retry
// of the same request ID has been answered the handed-over grant
// meanwhile; the withdrawal must not release that grant behind its
// holder's back (it did before the registry's fix).
package chaos

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/wire"
)

func TestReproCancelWaitReleasesRetriedGrant(t *testing.T) {
	ctx := context.Background()
	key, err := grant.GenerateKey(grant.AlgEd25519, "k1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(memstore.New(), registry.DefaultConfig(1), clock.System{}, key)
	if err != nil {
		t.Fatal(err)
	}
	const res = "chaos/repro"
	req := func(op, id string, waitMs uint64) wire.AcquireRequest {
		return wire.AcquireRequest{Resource: res, OperationID: op, OperationClass: "settle", RequestID: id, TTLMs: 3000, WaitMs: waitMs}
	}
	h, err := reg.Acquire(ctx, "holder", req("op-h", "req-h", 0))
	if err != nil {
		t.Fatal(err)
	}
	// Worker w's first attempt queues behind the holder (a replica blocked
	// on etcd, its client about to time out).
	first, err := reg.StartAcquire("w", req("op-w", "req-w", 5000))
	if err != nil {
		t.Fatal(err)
	}
	if first.Step(ctx, false) {
		t.Fatal("first attempt was answered; want it queued")
	}
	// The holder releases: the lease is handed to req-w in the same write.
	if err := reg.Release(ctx, "holder", res, h.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	// w's client retries the same request ID (its lost-answer recovery) and
	// is answered the handed grant: w now holds the lease, HELD proof in hand.
	got, err := reg.Acquire(ctx, "w", req("op-w", "req-w", 5000))
	if err != nil || got.Status.State != grant.StateHeld {
		t.Fatalf("retry: %v, %v", got.Status, err)
	}
	// The first attempt's caller is gone: the replica withdraws its ticket.
	first.Abandon(ctx)
	st, err := reg.Status(ctx, got.Grant)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.State != grant.StateHeld {
		other, err := reg.Acquire(ctx, "x", req("op-x", "req-x", 0))
		if err != nil {
			t.Fatalf("w was answered HELD for %s, then its abandoned first attempt made it %s (another acquire: %v)", got.Grant.Lease, st.Status.State, err)
		}
		t.Errorf("w was answered HELD for %s (fence %d), then its abandoned first attempt made it %s; owner x is granted %s (fence %d) while w still holds a HELD proof",
			got.Grant.Lease, got.Grant.FenceToken, st.Status.State, other.Grant.Lease, other.Grant.FenceToken)
	}
}
