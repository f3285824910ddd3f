package objgate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// ReceiptBytesMax bounds a receipt or record object read back.
const ReceiptBytesMax = 16 << 10

// materialize writes a committed receipt's two objects: by (fence,
// segment) and under its operation. The content is fixed by the receipt,
// so writing it again (a retry, a second writer) changes nothing.
func (g *Gate) materialize(ctx context.Context, r gate.Receipt) error {
	b := stored.Encode(stored.FromReceipt(r))
	errs := make(chan error, 2)
	for _, key := range []string{g.receiptKey(r.Resource, r.FenceToken, r.SegmentSeq),
		g.opPrefix(r.Resource, r.OperationID) + seqName(r.FenceToken, r.SegmentSeq)} {
		go func() { errs <- g.put(ctx, key, b) }()
	}
	if err := errors.Join(<-errs, <-errs); err != nil {
		return fmt.Errorf("objgate: write receipt %s: %w", r.ID(), err)
	}
	return nil
}

// readReceipt reads the receipt object at key, nil if there is none.
func (g *Gate) readReceipt(ctx context.Context, key string) (*gate.Receipt, error) {
	b, _, err := g.get(ctx, key, ReceiptBytesMax)
	if errors.Is(err, errNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var j stored.Receipt
	if err := stored.Decode(b, &j); err != nil {
		return nil, err
	}
	r, err := j.GateReceipt()
	return &r, err
}

// operationReceipts returns the receipts of operationID as of h: the
// objects under its operation prefix plus h's last receipt, by fence and
// segment.
func (g *Gate) operationReceipts(ctx context.Context, resource, operationID string, h held) ([]gate.Receipt, error) {
	keys, err := g.list(ctx, g.opPrefix(resource, operationID))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []gate.Receipt
	for _, k := range keys {
		r, err := g.readReceipt(ctx, k)
		if err != nil || r == nil {
			return nil, errors.Join(err, fmt.Errorf("objgate: receipt %s vanished", k))
		}
		if r.OperationID == operationID { // the prefix is a truncated hash
			out, seen[r.ID()] = append(out, *r), true
		}
	}
	if l := h.last; l != nil && l.OperationID == operationID && !seen[l.ID()] {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.FenceToken < b.FenceToken || a.FenceToken == b.FenceToken && a.SegmentSeq < b.SegmentSeq
	})
	return out, nil
}

// writeRecords writes one object per record, under records/<kind>/ with
// a key that sorts by the gate clock.
func (g *Gate) writeRecords(ctx context.Context, h held, recs []stored.Record) error {
	for _, r := range recs {
		g.mu.Lock()
		g.records++
		n := g.records
		g.mu.Unlock()
		var tag [4]byte
		_, _ = rand.Read(tag[:])
		key := fmt.Sprintf("%srecords/%s/%020d-%020d-%08d-%s", g.base(r.Resource), r.Kind, r.AtMs, h.m.Version, n, hex.EncodeToString(tag[:]))
		if err := g.put(ctx, key, stored.Encode(r)); err != nil {
			return fmt.Errorf("objgate: record %s: %w", r.Kind, err)
		}
	}
	return nil
}

// Records lists a resource's entries of one kind ("alarm", "quarantine",
// "shadow" or "action"), oldest first by the gate clock.
func (g *Gate) Records(ctx context.Context, kind, resource string) ([]Record, error) {
	switch kind {
	case stored.RecordAlarm, stored.RecordQuarantine, stored.RecordShadow, stored.RecordAction:
	default:
		return nil, fmt.Errorf("objgate: unknown record kind %q", kind)
	}
	keys, err := g.list(ctx, g.base(resource)+"records/"+kind+"/")
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(keys))
	for _, k := range keys {
		b, _, err := g.get(ctx, k, ReceiptBytesMax)
		if err != nil {
			return nil, err
		}
		var r Record
		if err := stored.Decode(b, &r); err != nil {
			return nil, fmt.Errorf("objgate: %s: %w", strings.TrimPrefix(k, g.prefix), err)
		}
		out = append(out, r)
	}
	return out, nil
}
