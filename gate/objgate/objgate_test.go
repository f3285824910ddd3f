// This file proves what is particular to the object store: on a store
// that ignores conditional writes the concurrent-writers case fails (the
// negative control of the probe and of If-Match), two gates with their
// own manifest caches on one bucket never accept a stale write nor
// reject a current one, and readers follow the manifest.
package objgate_test

import (
	"context"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/s3local"
)

func TestWithoutConditionalWritesConcurrentWritersFail(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxy, err := s3local.StripConditions(ctx, s3local.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	mutant := func(t testing.TB, cfg conformance.Config) conformance.Harness {
		_, bucket := s3local.NewBucket(t)
		g, err := objgate.OpenUnprobed(ctx, objgate.Config{Client: s3local.Client(proxy.URL, "fencegate", "fencegate-secret"),
			Bucket: bucket, Policy: gate.Policy{Verifier: cfg.Verifier}, Querier: cfg.Querier, Clock: cfg.Clock})
		if err != nil {
			t.Fatal(err)
		}
		return &harness{g: g}
	}
	why := conformance.Fails(t, mutant, "ConcurrentWriters")
	if why == "" {
		t.Fatal("on a store ignoring If-Match the concurrent writers still passed: the case cannot see a lost update")
	}
	t.Logf("without conditional writes: %s", why)
}

func TestTwoGatesOneBucket(t *testing.T) {
	ctx := context.Background()
	c, bucket := s3local.NewBucket(t)
	iss := gatetest.NewIssuer("two")
	clock := fakeclock.New(iss.Now.Add(1e9))
	open := func() *harness {
		g, err := objgate.Open(ctx, objgate.Config{Client: c, Bucket: bucket, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return &harness{g: g}
	}
	a, b := open(), open()
	const r = "two/one"
	w := func(fence uint64, op string) gatetest.Writer {
		return gatetest.Writer{Resource: r, Owner: "worker-a", Lease: op, OperationID: op, Fence: fence}
	}
	step := func(h *harness, fence uint64, op string, seq uint64, want gate.Outcome) {
		t.Helper()
		p := op + "-" + string(rune('0'+seq))
		_, err := h.Apply(ctx, "worker-a", iss.Mutation(w(fence, op), seq, p), p)
		if got := gate.OutcomeOf(err); got != want {
			t.Fatalf("fence %d seq %d: %s (%v), want %s", fence, seq, got, err, want)
		}
	}
	step(a, 5, "op-a", 1, gate.Accepted)   // a holds the manifest at fence 5
	step(b, 6, "op-b", 1, gate.Accepted)   // b moves it on
	step(a, 5, "op-a", 2, gate.StaleOwner) // a's held manifest says accept; the replace says no
	step(b, 7, "op-c", 1, gate.Accepted)
	step(a, 7, "op-c", 2, gate.Accepted) // a's held manifest (fence 6) would say SEGMENT_GAP
	fx, err := a.Effects(ctx, r)
	if err != nil || len(fx) != 4 || fx[3] != "op-c-2" {
		t.Fatalf("content %q %v", fx, err)
	}
	if st, _ := b.State(ctx, r); st.HighestFence != 7 || st.LastSegmentSeq != 2 {
		t.Fatalf("state %+v", st)
	}
}
