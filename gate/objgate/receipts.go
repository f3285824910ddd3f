package objgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencegate/fencegate/gate"
)

// Receipts live in the manifest until it holds ManifestReceiptsMax; the
// accept that finds it full writes them out before it replaces the
// manifest: one object receipts/<last> holding them all, named by the
// (fence, segment) of the last, and for each operation among them an
// empty object ops/<hash(operation)>/<last> pointing to it. A batch's
// content is fixed by the manifest it empties, so a writer that loses the
// race after writing it wrote what the winner writes. Every receipt is
// thus in the manifest or in an object written before the manifest that
// let it go, never updated or deleted. Format 1 wrote one object per
// receipt under the same names (ops/… holding the receipt itself); they
// read as batches of one.

const batchMagic = "fencegate-receipts 2\n"

// BatchBytesMax bounds a receipt batch read back (a receipt is under
// 1 KiB in its JSON form).
const BatchBytesMax = (ManifestReceiptsMax + 1) << 10

// encodeBatch writes receipts as a batch object: the magic line, then
// one receipt per line, in its JSON form (gate.Receipt.AppendJSON).
func encodeBatch(rs []heldReceipt) []byte {
	b := []byte(batchMagic)
	for _, r := range rs {
		b = append(r.r.AppendJSON(b), '\n')
	}
	return b
}

// ErrReceiptBatch: a receipt batch (or format 1 receipt object) the gate
// cannot read: malformed, or holding what no batch of its name can (a
// receipt of another resource, not an accept, out of order, not ending
// at the receipt it is named by). Nothing is decided on it.
var ErrReceiptBatch = errors.New("objgate: unreadable receipt batch")

// parseBatch reads a batch (or a format 1 receipt object) of resource
// named by (fence, seq) of its last receipt.
func parseBatch(b []byte, resource, name string) ([]gate.Receipt, error) {
	var lines [][]byte
	if rest, ok := bytes.CutPrefix(b, []byte(batchMagic)); ok {
		lines = bytes.SplitAfter(rest, []byte{'\n'})
		if len(lines) < 2 || len(lines[len(lines)-1]) != 0 {
			return nil, fmt.Errorf("%w: empty or not ending in a newline", ErrReceiptBatch)
		}
		lines = lines[:len(lines)-1]
	} else if len(b) > 0 && b[0] == '{' {
		lines = [][]byte{b} // format 1: one receipt
	} else {
		return nil, fmt.Errorf("%w: not a receipt batch", ErrReceiptBatch)
	}
	out := make([]gate.Receipt, 0, len(lines))
	for _, l := range lines {
		r, err := gate.DecodeReceipt(bytes.TrimSuffix(l, []byte{'\n'}))
		if err != nil { // the store's bytes, not a mutation: no gate outcome (%v)
			return nil, fmt.Errorf("%w: %v", ErrReceiptBatch, err)
		}
		switch {
		case r.Resource != resource:
			return nil, fmt.Errorf("%w: receipt %s is of %s", ErrReceiptBatch, r.ID(), r.Resource)
		case r.Outcome != gate.Accepted:
			return nil, fmt.Errorf("%w: receipt %s is %s, not an accept", ErrReceiptBatch, r.ID(), r.Outcome)
		case len(out) > 0 && !above(r.FenceToken, r.SegmentSeq, out[len(out)-1].FenceToken, out[len(out)-1].SegmentSeq):
			return nil, fmt.Errorf("%w: receipts out of order at %s", ErrReceiptBatch, r.ID())
		}
		out = append(out, r)
	}
	if last := out[len(out)-1]; seqName(last.FenceToken, last.SegmentSeq) != name {
		return nil, fmt.Errorf("%w: named %s, its last receipt is at %s", ErrReceiptBatch, name, seqName(last.FenceToken, last.SegmentSeq))
	}
	return out, nil
}

// flush writes h's receipts out: the batch and, per operation, its
// pointer.
func (g *Gate) flush(ctx context.Context, resource string, h held) error {
	if len(h.receipts) == 0 {
		return nil
	}
	last := h.receipts[len(h.receipts)-1].r
	name := seqName(last.FenceToken, last.SegmentSeq)
	objs := map[string][]byte{g.base(resource) + "receipts/" + name: encodeBatch(h.receipts)}
	for _, r := range h.receipts {
		objs[g.opPrefix(resource, r.r.OperationID)+name] = nil
	}
	errs := make(chan error, len(objs))
	for k, body := range objs {
		go func() { errs <- g.put(ctx, k, body) }()
	}
	var err error
	for range objs {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return fmt.Errorf("objgate: write receipts up to %s: %w", name, err)
	}
	return nil
}

// writtenReceipt finds the receipt at (fence, seq) among the objects:
// the first whose name, the last (fence, segment) it holds, is not
// below it. Batches cover consecutive runs of accepts, so if that one
// does not hold it, none does.
func (g *Gate) writtenReceipt(ctx context.Context, resource string, fence, seq uint64) (*gate.Receipt, error) {
	prefix := g.base(resource) + "receipts/"
	in := &s3.ListObjectsV2Input{Bucket: &g.bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)}
	switch {
	case seq > 0:
		in.StartAfter = aws.String(prefix + seqName(fence, seq-1))
	case fence > 0:
		in.StartAfter = aws.String(prefix + seqName(fence-1, math.MaxUint64))
	}
	out, err := g.api.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, classify(err)
	}
	if len(out.Contents) == 0 {
		return nil, nil
	}
	rs, err := g.readBatch(ctx, resource, aws.ToString(out.Contents[0].Key))
	if err != nil {
		return nil, err
	}
	for i := range rs {
		if rs[i].FenceToken == fence && rs[i].SegmentSeq == seq {
			return &rs[i], nil
		}
	}
	return nil, nil
}

// readBatch reads the batch at key (…/receipts/<fence>-<segment>) of
// resource.
func (g *Gate) readBatch(ctx context.Context, resource, key string) ([]gate.Receipt, error) {
	b, _, err := g.get(ctx, key, BatchBytesMax)
	if err != nil {
		return nil, err
	}
	rs, err := parseBatch(b, resource, key[strings.LastIndexByte(key, '/')+1:])
	if err != nil {
		return nil, fmt.Errorf("objgate: %s: %w", key, err)
	}
	return rs, nil
}

// operationReceipts returns the receipts of operationID as of h: those in
// the batches its pointers name (and format 1's objects of one receipt)
// plus h's, by fence and segment.
func (g *Gate) operationReceipts(ctx context.Context, resource, operationID string, h held) ([]gate.Receipt, error) {
	prefix := g.opPrefix(resource, operationID)
	objs, err := g.list(ctx, prefix)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []gate.Receipt
	add := func(r gate.Receipt) {
		if r.OperationID == operationID && !seen[r.ID()] { // the prefix is a truncated hash
			out, seen[r.ID()] = append(out, r), true
		}
	}
	for _, o := range objs {
		key := o.key
		if o.size == 0 { // a pointer to a batch
			key = g.base(resource) + "receipts/" + strings.TrimPrefix(o.key, prefix)
		}
		rs, err := g.readBatch(ctx, resource, key)
		if o.size == 0 && errors.Is(err, errNotFound) {
			// A pointer whose batch is not there: the flush that wrote
			// it failed before the batch landed (or is still writing
			// it), so no manifest has let the batch's receipts go, and h,
			// read before this listing, still holds them.
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			add(r)
		}
	}
	for _, r := range h.receipts {
		add(r.r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.FenceToken < b.FenceToken || a.FenceToken == b.FenceToken && a.SegmentSeq < b.SegmentSeq
	})
	return out, nil
}
