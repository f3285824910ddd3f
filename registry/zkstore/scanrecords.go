package zkstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/fencegate/fencegate/registry"
)

// ScanRecords implements registry.Store: the record directory's children
// are listed and decoded, those under prefix and after after are taken in
// name order up to limit, and read as one consistent view (readView), so
// every record listed is as it was at one revision. A record node without
// data (a placeholder a commit made before its multi failed) is not a
// record and is not listed.
func (s *Store) ScanRecords(ctx context.Context, prefix, after string, limit int) ([]registry.RecordSlot, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("zkstore: scan records: %w", err)
	}
	names, err := s.children(ctx, s.root+recordDir)
	if err != nil {
		return nil, err
	}
	resources, err := keysOf(s.root+recordDir, names)
	if err != nil {
		return nil, err
	}
	var picked, paths []string
	for _, r := range resources {
		if strings.HasPrefix(r, prefix) && r > after && len(picked) < 2*limit {
			picked = append(picked, r) // room for placeholders, which are rare
			paths = append(paths, s.recordPath(r))
		}
	}
	v, err := s.readView(ctx, paths, nil, false)
	if err != nil {
		return nil, fmt.Errorf("zkstore: scan records: %w", err)
	}
	out := make([]registry.RecordSlot, 0, min(len(picked), limit))
	for _, r := range picked {
		n := v.nodes[s.recordPath(r)]
		if n.modRev() == 0 {
			continue
		}
		rec, err := registry.DecodeRecord(n.data)
		if err != nil {
			return nil, fmt.Errorf("zkstore: %s: %w", r, err)
		}
		if out = append(out, registry.RecordSlot{Resource: r, Record: rec, ModRev: n.modRev()}); len(out) == limit {
			break
		}
	}
	return out, nil
}
