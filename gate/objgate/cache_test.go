// This file proves the held manifest is only a shortcut: a gate whose
// manifest another gate replaced behind it never accepts on its stale
// copy (and, with the conditional replace's compare removed, does — the
// negative control, also failing the shared ConcurrentWriters case) nor
// refuses a write the stored one allows (and, answering from its copy,
// does), a warm small write is one request, and a lost race reads the
// winner's manifest once.
package objgate_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/s3local"
)

// counting is the store (and the bucket) with a count of each kind of
// request.
type counting struct {
	objgate.API
	bucket            string
	puts, gets, lists atomic.Int64
}

func (c *counting) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	c.puts.Add(1)
	return c.API.PutObject(ctx, in, o...)
}

func (c *counting) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.gets.Add(1)
	return c.API.GetObject(ctx, in, o...)
}

func (c *counting) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, o ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	c.lists.Add(1)
	return c.API.ListObjectsV2(ctx, in, o...)
}

func (c *counting) total() int64 { return c.puts.Load() + c.gets.Load() + c.lists.Load() }

// bucketGates opens n gates on one fresh bucket through one counting
// client, with a clock and an issuer they share.
func bucketGates(t testing.TB, n int) ([]*harness, *counting, *gatetest.Issuer) {
	t.Helper()
	c, bucket := s3local.NewBucket(t)
	cc := &counting{API: c, bucket: bucket}
	iss := gatetest.NewIssuer("objgate")
	clock := fakeclock.New(iss.Now.Add(time.Second))
	var hs []*harness
	for range n {
		g, err := objgate.Open(context.Background(), objgate.Config{Client: cc, Bucket: bucket, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, &harness{g: g})
	}
	return hs, cc, iss
}

func TestStaleManifestNeverAccepts(t *testing.T) {
	if why := staleManifest(t, nil); why != "" {
		t.Fatal(why)
	}
}

func TestStaleManifestAcceptsWithoutCompare(t *testing.T) {
	why := staleManifest(t, objgate.WithoutCompare)
	if why == "" {
		t.Fatal("with the compare removed the stale manifest still did not accept: the test cannot see a stale copy")
	}
	t.Logf("without the compare: %s", why)
}

// staleManifest lets gate b replace the manifest behind gate a's held
// copy, then sends a a write its copy would accept; it returns what went
// wrong, "" if nothing did.
func staleManifest(t *testing.T, mutate func(*objgate.Gate)) string {
	ctx := context.Background()
	hs, _, iss := bucketGates(t, 2)
	a, b := hs[0], hs[1]
	if mutate != nil {
		mutate(a.g)
	}
	const r = "obj/stale"
	write := func(h *harness, fence, seq uint64, op string) error {
		p := fmt.Sprintf("%s-%d", op, seq)
		_, err := h.Apply(ctx, "worker-a", iss.Mutation(gatetest.Writer{Resource: r, Owner: "worker-a", Lease: op, OperationID: op, Fence: fence}, seq, p), p)
		return err
	}
	if err := write(a, 5, 1, "op-a"); err != nil { // a holds fence 5, segment 1
		t.Fatal(err)
	}
	if err := write(b, 6, 1, "op-b"); err != nil { // behind a's back
		t.Fatal(err)
	}
	err := write(a, 5, 2, "op-a") // a's copy says: the next segment, accept
	if got := gate.OutcomeOf(err); got != gate.StaleOwner {
		return fmt.Sprintf("fence 5 segment 2 on a stale manifest: %s (%v), want STALE_OWNER", got, err)
	}
	if fx, err := b.Effects(ctx, r); err != nil || !slices.Equal(fx, []string{"op-a-1", "op-b-1"}) {
		return fmt.Sprintf("content %q %v", fx, err)
	}
	if st, err := b.State(ctx, r); err != nil || st.HighestFence != 6 || st.LastSegmentSeq != 1 {
		return fmt.Sprintf("state %+v %v", st, err)
	}
	return ""
}

func TestStaleManifestNeverRejects(t *testing.T) {
	if why := staleRejection(t, nil); why != "" {
		t.Fatal(why)
	}
}

func TestStaleManifestRejectsWhenTrusted(t *testing.T) {
	why := staleRejection(t, objgate.TrustingHeld)
	if why == "" {
		t.Fatal("answering from the held manifest still accepted: the test cannot see a stale rejection")
	}
	t.Logf("trusting the held manifest: %s", why)
}

// staleRejection lets gate b accept the next segment of a's lease behind
// a's held copy (two gates in front of one bucket), then sends a the
// segment after it: a's copy says SEGMENT_GAP, the stored manifest says
// accept. It returns what went wrong, "" if nothing did: refusing a
// current writer is an availability defect.
func staleRejection(t *testing.T, mutate func(*objgate.Gate)) string {
	ctx := context.Background()
	hs, _, iss := bucketGates(t, 2)
	a, b := hs[0], hs[1]
	if mutate != nil {
		mutate(a.g)
	}
	const r = "obj/stale-reject"
	write := func(h *harness, seq uint64) error {
		p := fmt.Sprintf("op-a-%d", seq)
		_, err := h.Apply(ctx, "worker-a", iss.Mutation(gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "op-a", OperationID: "op-a", Fence: 5}, seq, p), p)
		return err
	}
	for i, h := range []*harness{a, b} { // segment 1 through a, segment 2 through b
		if err := write(h, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := write(a, 3); err != nil {
		return fmt.Sprintf("segment 3 after b's segment 2: %s (%v), want ACCEPTED", gate.OutcomeOf(err), err)
	}
	if fx, err := b.Effects(ctx, r); err != nil || !slices.Equal(fx, []string{"op-a-1", "op-a-2", "op-a-3"}) {
		return fmt.Sprintf("content %q %v", fx, err)
	}
	return ""
}

func TestWithoutCompareConcurrentWritersFail(t *testing.T) {
	mutant := func(t testing.TB, cfg conformance.Config) conformance.Harness {
		h := newHarness(t, cfg).(*harness)
		objgate.WithoutCompare(h.g)
		return h
	}
	why := conformance.Fails(t, mutant, "ConcurrentWriters")
	if why == "" {
		t.Fatal("without the compare the concurrent writers still passed: the case cannot see a lost update")
	}
	t.Logf("without the compare: %s", why)
}

func TestWarmSmallWriteIsOnePut(t *testing.T) {
	ctx := context.Background()
	hs, cc, iss := bucketGates(t, 1)
	w := gatetest.Writer{Resource: "obj/warm", Owner: "worker-a", Lease: "l", OperationID: "op", Fence: 3}
	for seq := uint64(1); seq <= 3; seq++ {
		before := cc.total()
		if _, err := hs[0].g.Apply(ctx, "worker-a", iss.Mutation(w, seq, "p"), func(context.Context, objgate.Current) ([]byte, error) {
			return []byte("content"), nil
		}); err != nil {
			t.Fatal(err)
		}
		n := cc.total() - before
		t.Logf("segment %d: %d requests", seq, n)
		if seq > 1 && n != 1 {
			t.Fatalf("a warm small write took %d requests, want 1 (the manifest's conditional PUT)", n)
		}
	}
}

// A lost race reads the winner's manifest once: the read that checks
// whether the refused replace had landed is the one the next attempt
// decides on.
func TestLostRaceReadsTheManifestOnce(t *testing.T) {
	ctx := context.Background()
	hs, cc, iss := bucketGates(t, 2)
	a, b := hs[0], hs[1]
	const r = "obj/lost-race"
	write := func(h *harness, fence, seq uint64, op string) error {
		p := fmt.Sprintf("%s-%d", op, seq)
		_, err := h.Apply(ctx, "worker-a", iss.Mutation(gatetest.Writer{Resource: r, Owner: "worker-a", Lease: op, OperationID: op, Fence: fence}, seq, p), p)
		return err
	}
	if err := write(a, 5, 1, "op-a"); err != nil { // a holds fence 5
		t.Fatal(err)
	}
	if err := write(b, 6, 1, "op-b"); err != nil { // behind a's back
		t.Fatal(err)
	}
	gets := cc.gets.Load()
	// a's copy says accept; the replace is refused; the read-back says STALE_OWNER.
	if err := write(a, 5, 2, "op-a"); gate.OutcomeOf(err) != gate.StaleOwner {
		t.Fatalf("fence 5 after fence 6: %v", err)
	}
	if g := cc.gets.Load() - gets; g != 1 {
		t.Fatalf("the lost race read %d objects, want 1 (the manifest, read back once)", g)
	}
}
