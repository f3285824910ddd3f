package negative

import (
	"context"
	"slices"
	"sync"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// staleReadStore is the stale-read control: a registry store that is
// not linearizable. Each read of a record answers with the record the
// previous read of it found (a follower lagging a read behind; one view
// per replica), a listing with the previous same listing's answer, and a
// commit compares nothing (the store's current revisions stand in for
// the ones the write was decided on): a decision made on a stale record
// commits over a newer one (a lock set's members alike). The semaphore rounds then count a slot
// granted while its holder is live, and more than N live holders
// (sim.SemaphoreCounts).
func staleReadStore(s registry.Store) registry.Store {
	return &staleRead{Store: s, reads: map[string]registry.Snapshot{}, scans: map[[2]string][]registry.RecordSlot{}}
}

type staleRead struct {
	registry.Store
	mu    sync.Mutex
	reads map[string]registry.Snapshot
	scans map[[2]string][]registry.RecordSlot
}

func (s *staleRead) Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	now, err := s.Store.Read(ctx, resource, keys)
	if err != nil || resource == "" {
		return now, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := now
	if was, ok := s.reads[resource]; ok {
		out.Record, out.RecordRev, out.RecordRaw = was.Record, was.RecordRev, was.RecordRaw
	}
	s.reads[resource] = now
	return out, nil
}

// ReadSet answers each member as Read answers a record: with what the
// previous read of it found.
func (s *staleRead) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	now, err := s.Store.ReadSet(ctx, resources, keys)
	if err != nil {
		return now, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := now
	out.Members = slices.Clone(now.Members)
	for i, m := range now.Members {
		if was, ok := s.reads[m.Resource]; ok {
			out.Members[i].Record, out.Members[i].RecordRev, out.Members[i].RecordRaw = was.Record, was.RecordRev, was.RecordRaw
		}
		s.reads[m.Resource] = registry.Snapshot{Resource: m.Resource, Record: m.Record, RecordRev: m.RecordRev, RecordRaw: m.RecordRaw}
	}
	return out, nil
}

func (s *staleRead) ScanRecords(ctx context.Context, prefix, after string, limit int) ([]registry.RecordSlot, error) {
	now, err := s.Store.ScanRecords(ctx, prefix, after, limit)
	if err != nil {
		return now, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{prefix, after}
	out, ok := s.scans[key]
	if !ok {
		out = now
	}
	s.scans[key] = now
	return out, nil
}

func (s *staleRead) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	names := make([]string, len(w.Members))
	for i, m := range w.Members {
		names[i] = m.Resource
	}
	cur, err := s.Store.Read(ctx, w.Resource, nil)
	if err == nil && len(names) > 0 {
		cur, err = s.Store.ReadSet(ctx, names, nil)
	}
	if err != nil {
		return registry.CommitResult{}, err
	}
	w.Members = slices.Clone(w.Members)
	for i := range w.Members {
		w.Members[i].RecordRev, w.Members[i].RecordWas, w.Members[i].RecordWasRaw = cur.Members[i].RecordRev, nil, nil
	}
	if w.Resource != "" {
		w.RecordRev = cur.RecordRev
	}
	w.RecordWas, w.RecordWasRaw, w.SettingsWas, w.SettingsRev = nil, nil, nil, cur.SettingsRev
	w.Requests = slices.Clone(w.Requests)
	for i := range w.Requests {
		w.Requests[i].Compare = false
	}
	return s.Store.Commit(ctx, w)
}
