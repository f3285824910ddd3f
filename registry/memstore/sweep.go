package memstore

import (
	"context"
	"sort"

	"github.com/fencegate/fencegate/registry"
)

// The sweep index: an item per (instant, request key), the resource its
// value. Items have no revision (the Store contract), so a map suffices;
// a scan sorts what is due, which is the simulator's and the tests' size.

// sweepName names one item: its instant and key (registry.SweepItem
// without its resource).
type sweepName struct {
	atMs int64
	key  [2]string // owner, request ID
}

func nameOfItem(it registry.SweepItem) sweepName {
	return sweepName{atMs: it.AtMs, key: [2]string{it.Key.Owner, it.Key.RequestID}}
}

// applySweepsLocked puts and deletes w's sweep index items.
func (s *Store) applySweepsLocked(w *registry.Write) {
	for _, sw := range w.Sweeps {
		if sw.Delete {
			delete(s.sweeps, nameOfItem(sw.Item))
			continue
		}
		s.sweeps[nameOfItem(sw.Item)] = sw.Item
	}
}

// ScanSweep implements registry.Store.
func (s *Store) ScanSweep(ctx context.Context, after registry.SweepItem, beforeMs int64, limit int) ([]registry.SweepItem, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []registry.SweepItem
	for _, it := range s.sweeps {
		if it.AtMs < beforeMs && after.Less(it) {
			out = append(out, it)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
