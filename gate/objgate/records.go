package objgate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/fencegate/fencegate/gate/internal/stored"
)

// RecordBytesMax bounds a record object read back.
const RecordBytesMax = 16 << 10

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
		key := fmt.Sprintf("%srecords/%s/%020d-%020d-%08d-%s", g.base(r.Resource), r.Kind, r.AtMs, h.version, n, hex.EncodeToString(tag[:]))
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
	objs, err := g.list(ctx, g.base(resource)+"records/"+kind+"/")
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(objs))
	for _, o := range objs {
		k := o.key
		b, _, err := g.get(ctx, k, RecordBytesMax)
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
