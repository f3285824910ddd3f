// This file proves the segmenter: segments computed concurrently (and
// finishing out of order) are submitted strictly in order within the
// parallelism bound, and once the resource answers with a higher fence the
// rest are abandoned, not retried — against a real gate on SQLite.
package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestSegmentsSubmittedInOrderUnderConcurrentComputation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	delays := make([]time.Duration, 41)
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(300)) * time.Microsecond
	}
	var running, peak atomic.Int32
	var mu sync.Mutex
	var order []uint64
	last, err := client.RunSegments(context.Background(), 40, client.SegmentOptions{Parallel: 4},
		func(ctx context.Context, seq uint64) (string, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(delays[seq])
			return fmt.Sprint("payload-", seq), nil
		},
		func(ctx context.Context, seq uint64, v string) error {
			mu.Lock()
			defer mu.Unlock()
			if v != fmt.Sprint("payload-", seq) {
				return fmt.Errorf("segment %d got %q", seq, v)
			}
			order = append(order, seq)
			return nil
		})
	if err != nil || last != 40 {
		t.Fatalf("last %d, err %v", last, err)
	}
	for i, s := range order {
		if s != uint64(i+1) {
			t.Fatalf("submission order %v", order)
		}
	}
	if p := peak.Load(); p > 4 {
		t.Fatalf("%d computations at once, bound 4", p)
	}
}

func TestSegmentsAbandonedOnceAHigherFenceWrote(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	res := f.Resource()
	a, b := f.Worker(clienttest.OwnerA, 30, true), f.Worker(clienttest.OwnerB, 31, true)
	la, err := f.Acquire(f.Ctx, a, clienttest.Request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	var submitted []uint64
	takeover := func() {
		// A stalls between building and sending segment 4; meanwhile its
		// lease is gone and B writes under a higher fence. A's status proof
		// has not run out yet, so only the fence stops it. (No drain: the
		// lease is lost, not given back by a careful owner.)
		if err := la.ReleaseNoDrain(f.Ctx); err != nil {
			t.Fatal(err)
		}
		lb, err := f.Acquire(f.Ctx, b, clienttest.Request("op-b"))
		if err != nil {
			t.Fatal(err)
		}
		eb, _ := lb.Envelope(1, gatetest.Payload("b1"))
		if _, err := res.Write(f.Ctx, clienttest.OwnerB, eb, "b1"); err != nil {
			t.Fatal(err)
		}
	}
	last, err := client.RunSegments(f.Ctx, 10, client.SegmentOptions{Parallel: 3},
		func(ctx context.Context, seq uint64) (gate.Mutation, error) {
			return la.Envelope(seq, gatetest.Payload(fmt.Sprint("a", seq)))
		},
		func(ctx context.Context, seq uint64, m gate.Mutation) error {
			if seq == 4 {
				takeover()
			}
			submitted = append(submitted, seq)
			_, err := res.Write(ctx, clienttest.OwnerA, m, fmt.Sprint("a", seq))
			return err
		})
	var ab *client.AbandonedError
	if !errors.As(err, &ab) || !errors.Is(err, client.ErrSuperseded) || !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("run: %v, want *AbandonedError wrapping STALE_OWNER", err)
	}
	if last != 3 || ab.LastAccepted != 3 || ab.Abandoned != 4 {
		t.Fatalf("last %d, abandoned from %d; want 3 and 4", ab.LastAccepted, ab.Abandoned)
	}
	if len(submitted) != 4 {
		t.Fatalf("submitted %v: nothing after the superseded segment may be sent", submitted)
	}
	if n := res.Rows(t); n != 4 {
		t.Fatalf("%d ledger rows, want 4 (a1..a3, b1)", n)
	}
}

func TestSegmentComputeFailureStopsTheRun(t *testing.T) {
	boom := errors.New("boom")
	var submitted atomic.Int32
	last, err := client.RunSegments(context.Background(), 10, client.SegmentOptions{Parallel: 2},
		func(ctx context.Context, seq uint64) (grant.Digest, error) {
			if seq == 3 {
				return grant.Digest{}, boom
			}
			return gatetest.Payload(fmt.Sprint(seq)), nil
		},
		func(ctx context.Context, seq uint64, d grant.Digest) error {
			submitted.Add(1)
			return nil
		})
	var se *client.SegmentError
	if !errors.As(err, &se) || !errors.Is(err, boom) || se.Seq != 3 || se.Submitting || last != 2 || submitted.Load() != 2 {
		t.Fatalf("last %d, submitted %d, err %v", last, submitted.Load(), err)
	}
}
