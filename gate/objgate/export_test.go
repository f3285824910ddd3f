package objgate

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// OpenUnprobed is Open without the probe: the negative control's way to
// run a gate on a store that ignores conditional writes.
func OpenUnprobed(ctx context.Context, cfg Config) (*Gate, error) { return open(ctx, cfg, false) }

// WithoutCompare makes g replace manifests without If-Match or
// If-None-Match: the negative control's mutant, committing decisions made
// on a held manifest whatever the stored one has become.
func WithoutCompare(g *Gate) { g.noCompare = true }

// TrustingHeld makes g answer a rejection decided on its held manifest
// without reading the stored one: the negative control's mutant,
// refusing writes the current manifest allows.
func TrustingHeld(g *Gate) { g.trustHeld = true }

// ParseManifest parses b as resource's manifest and returns it encoded
// again (in format 3; a format 1 manifest, which has no tag, with the
// zero tag, as a replace would give it one).
func ParseManifest(g *Gate, resource string, b []byte) ([]byte, error) {
	h, err := g.parseManifest(resource, b)
	if err != nil {
		return nil, err
	}
	if h.tag == "" {
		h.tag = "0000000000000000"
	}
	return h.encode(), nil
}

// SampleManifests encodes manifests of resource for the parser's tests:
// no receipt, a run of three under one grant then one under the next
// fence, content inline and in an object.
func SampleManifests(g *Gate, resource string) [][]byte {
	h := g.newHeld(resource, gate.ModeEnforce)
	h.tag = "00000000000000ff"
	out := [][]byte{h.encode()}
	for i, r := range SampleReceipts(resource) {
		h.version++
		h.tag = fmt.Sprintf("%016x", h.version)
		h.receipts = appendReceipt(h.receipts, r)
		h.st.HighestFence, h.st.LastSegmentSeq, h.st.Root, h.st.GrantDigest = r.FenceToken, r.SegmentSeq, r.OperationRoot, r.GrantDigest
		h.inline, h.data = []byte(fmt.Sprint("content ", i)), ""
		if i == 2 {
			h.inline, h.data = nil, g.base(resource)+"data/x"
		}
		out = append(out, h.encode())
	}
	return out
}

// SampleReceipts are the receipts of SampleManifests: a run of three
// under one grant, then one under the next fence.
func SampleReceipts(resource string) []gate.Receipt {
	at := time.Date(2026, 7, 19, 10, 0, 1, 0, time.UTC)
	mk := func(fence, seq uint64, payload string) gate.Receipt {
		return gate.Receipt{Resource: resource, FenceToken: fence, OperationRoot: grant.OperationRoot(resource, fmt.Sprint("op-", fence)),
			OperationID: fmt.Sprint("op-", fence), SegmentSeq: seq, PayloadDigest: sha256.Sum256([]byte(payload)),
			GrantDigest: sha256.Sum256([]byte(fmt.Sprint("grant-", fence))), AcceptedAt: at, Mode: gate.ModeEnforce, Outcome: gate.Accepted}
	}
	return []gate.Receipt{mk(1, 1, "a"), mk(1, 2, "b"), mk(1, 3, "c"), mk(2, 1, "d")}
}

// NopAPI is a store the parser's tests never reach.
type NopAPI struct{ API }
