// This file pins the receipt's canonical bytes and digest: stored receipt
// IDs must not change when the encoder does.
package gate_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// receiptEncodingFmt is the original fmt-based encoder, kept as the
// reference the appending encoder must match byte for byte.
func receiptEncodingFmt(r *gate.Receipt) []byte {
	return fmt.Appendf(nil,
		"resource: %s\nfenceToken: %d\noperationRoot: %s\noperationId: %s\nsegmentSeq: %d\npayloadDigest: %s\ngrant: %s\nacceptedAt: %s\nmode: %s\noutcome: %s\n",
		r.Resource, r.FenceToken, r.OperationRoot, r.OperationID, r.SegmentSeq, r.PayloadDigest,
		r.GrantDigest, r.AcceptedAt.UTC().Format(grant.TimeLayout), r.Mode, r.Outcome)
}

func TestReceiptEncodingPinned(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), 900)) // past the digest's stack buffer
	for _, r := range []gate.Receipt{
		{},
		{Resource: "inv/1", FenceToken: 7, OperationRoot: grant.OperationRoot("inv/1", "op-a"), OperationID: "op-a",
			SegmentSeq: 3, PayloadDigest: gatetest.Payload("p"), GrantDigest: gatetest.Payload("g"),
			AcceptedAt: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.FixedZone("x", 3600)), Mode: gate.ModeEnforce, Outcome: gate.Accepted},
		{Resource: "a/" + long, FenceToken: gate.CounterMax, OperationID: long, SegmentSeq: 1, Mode: gate.ModeShadow, Outcome: gate.Accepted},
	} {
		want := receiptEncodingFmt(&r)
		if got := r.Encode(); !bytes.Equal(got, want) {
			t.Fatalf("encoding changed:\n got %q\nwant %q", got, want)
		}
		if got, want := r.Digest(), grant.Digest(sha256Of("fencegate/receipt/v1\x00", want)); got != want {
			t.Fatalf("digest %s, want %s", got, want)
		}
	}
}

func sha256Of(domain string, b []byte) [32]byte {
	return sha256.Sum256(append([]byte(domain), b...))
}
