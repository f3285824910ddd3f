// This file proves a bucket written in format 1 (a JSON manifest with the
// last receipt and a data key, one object per earlier receipt) is read
// as it was and migrated by the next write: content, state, every
// receipt, replays of old segments — before the migration, after it, and
// after receipts written out in batches sit beside format 1's objects.
package objgate_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestFormat1Migrates(t *testing.T) {
	ctx := context.Background()
	// Real receipts and state, from a gate on a bucket of their own.
	srcs, _, iss := bucketGates(t, 1)
	src := srcs[0]
	const r = "obj/v1"
	w := gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "l", OperationID: "op-a", Fence: 5}
	var rcpts []gate.Receipt
	for seq := uint64(1); seq <= 5; seq++ {
		p := fmt.Sprintf("a%d", seq)
		rc, err := src.Apply(ctx, "worker-a", iss.Mutation(w, seq, p), p)
		if err != nil {
			t.Fatal(err)
		}
		rcpts = append(rcpts, rc)
	}
	st, err := src.State(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	// The same history laid out in format 1 in another bucket.
	hs, cc, _ := bucketGates(t, 2)
	bucket := cc.bucket
	base := "fencegate/obj%2Fv1/"
	put := func(key string, body []byte) {
		t.Helper()
		if _, err := cc.API.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	op := sha256.Sum256([]byte("op-a"))
	for _, rc := range rcpts[:4] {
		pos := fmt.Sprintf("%020d-%020d", rc.FenceToken, rc.SegmentSeq)
		put(base+"receipts/"+pos, rc.AppendJSON(nil))
		put(base+"ops/"+hex.EncodeToString(op[:16])+"/"+pos, rc.AppendJSON(nil))
	}
	put(base+"data/legacy", []byte("a1\na2\na3\na4\na5\n"))
	v1, err := jsonV1(5, stored.FromState(st), &rcpts[4], base+"data/legacy")
	if err != nil {
		t.Fatal(err)
	}
	put(base+"manifest", v1)

	a, fresh := hs[0], hs[1]
	check := func(when string, n int) {
		t.Helper()
		if fx, err := fresh.Effects(ctx, r); err != nil || len(fx) != n || fx[0] != "a1" {
			t.Fatalf("%s: content %q %v", when, fx, err)
		}
		ans, err := fresh.g.QueryOperation(ctx, r, "op-a", 5)
		if err != nil || ans.Verdict != gate.VerdictAccepted || len(ans.Receipts) != n {
			t.Fatalf("%s: query %d receipts %v", when, len(ans.Receipts), err)
		}
		for i := range rcpts {
			if ans.Receipts[i].ID() != rcpts[i].ID() {
				t.Fatalf("%s: receipt %d differs", when, i+1)
			}
		}
		rc, err := fresh.Apply(ctx, "worker-a", iss.Mutation(w, 2, "a2"), "a2") // a format 1 object
		if gate.OutcomeOf(err) != gate.Replayed || rc.ID() != rcpts[1].ID() {
			t.Fatalf("%s: replay of segment 2: %v", when, err)
		}
	}
	check("format 1", 5)
	n := 5
	for range objgate.ManifestReceiptsMax + 2 { // migrates, then writes receipts out
		n++
		p := fmt.Sprintf("a%d", n)
		rc, err := a.Apply(ctx, "worker-a", iss.Mutation(w, uint64(n), p), p)
		if err != nil {
			t.Fatalf("segment %d: %v", n, err)
		}
		rcpts = append(rcpts, rc)
		if n == 6 {
			if b := getObject(t, cc.API, bucket, base+"manifest"); !bytes.HasPrefix(b, []byte("fencegate-manifest 3\n")) {
				t.Fatalf("not migrated: %.40q", b)
			}
			check("migrated", n)
		}
	}
	check("batches beside format 1", n)
}

// jsonV1 writes a format 1 manifest as that format's encoder did.
func jsonV1(version uint64, st stored.State, last *gate.Receipt, data string) ([]byte, error) {
	type manifestV1 struct {
		Version uint64        `json:"version"`
		State   stored.State  `json:"state"`
		Last    *gate.Receipt `json:"lastReceipt,omitempty"` // the stored form then: the same bytes
		Data    string        `json:"data,omitempty"`
	}
	return stored.Encode(manifestV1{version, st, last, data}), nil
}

func getObject(t testing.TB, api objgate.API, bucket, key string) []byte {
	t.Helper()
	out, err := api.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
