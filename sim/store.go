package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/fencegate/fencegate/registry"
)

// store is the simulated registry store: a linearizable compare-and-swap
// map with etcd's revision rules, plus the two things a simulator needs and
// registry/memstore does not offer — an image of its whole state that can
// be restored later (the "backend restored from an old snapshot" fault),
// and a hook that tells the checker every committed record (ground truth of
// what the registry decided). Values are kept as the pointers the registry
// wrote: the registry core never mutates a record in place (see
// registry.Record), so sharing them is safe and saves a JSON round trip per
// call. The simulator is single-threaded per round; the store has no lock.
//
// Revisions survive a restore: the data goes back, the counter does not,
// as when an operator reloads a backup into a live cluster. That keeps the
// Store contract ("revisions only grow") while the fence sequence inside
// the records goes backwards, which is exactly the regression to inject.
type store struct {
	rev      uint64
	records  map[string]storedRecord
	requests map[registry.RequestKey]storedEntry
	settings registry.Settings
	setRev   uint64
	// onCommit, if set, sees every successful commit's record write.
	onCommit func(resource string, rec *registry.Record, rev uint64)
}

type storedRecord struct {
	rec    *registry.Record
	modRev uint64
}

type storedEntry struct {
	entry             *registry.RequestEntry
	modRev, createRev uint64
}

// storeImage is a restorable copy of a store's data.
type storeImage struct {
	records  map[string]storedRecord
	requests map[registry.RequestKey]storedEntry
	settings registry.Settings
	setRev   uint64
}

var _ registry.Store = (*store)(nil)

func newStore() *store {
	return &store{
		rev:      1,
		records:  make(map[string]storedRecord, 2),
		requests: make(map[registry.RequestKey]storedEntry, 8),
	}
}

// image returns a copy of the data (values are immutable and shared).
func (s *store) image() storeImage {
	return storeImage{records: maps.Clone(s.records), requests: maps.Clone(s.requests), settings: s.settings, setRev: s.setRev}
}

// restore puts the data of im back; the revision counter keeps growing.
func (s *store) restore(im storeImage) {
	s.records, s.requests = maps.Clone(im.records), maps.Clone(im.requests)
	if s.records == nil {
		s.records = make(map[string]storedRecord, 2)
	}
	if s.requests == nil {
		s.requests = make(map[registry.RequestKey]storedEntry, 8)
	}
	s.settings, s.setRev = im.settings, im.setRev
	s.rev++
}

func (s *store) Read(ctx context.Context, resource string, keys []registry.RequestKey) (registry.Snapshot, error) {
	return s.snapshot(resource, keys), nil
}

func (s *store) snapshot(resource string, keys []registry.RequestKey) registry.Snapshot {
	snap := registry.Snapshot{Revision: s.rev, Resource: resource, Settings: s.settings, SettingsRev: s.setRev}
	if resource != "" {
		if r, ok := s.records[resource]; ok {
			snap.Record, snap.RecordRev = r.rec, r.modRev
		}
	}
	if len(keys) > 0 {
		snap.Requests = make([]registry.RequestSlot, len(keys))
		for i, k := range keys {
			e := s.requests[k]
			snap.Requests[i] = registry.RequestSlot{Key: k, Entry: e.entry, ModRev: e.modRev, CreateRev: e.createRev}
		}
	}
	return snap
}

func (s *store) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if w.Record != nil && w.Resource == "" {
		return registry.CommitResult{}, fmt.Errorf("sim store: record write without a resource")
	}
	if !s.comparesHold(w) {
		return registry.CommitResult{Current: s.snapshot(w.Resource, w.ReadKeys)}, nil
	}
	s.rev++
	if w.Record != nil {
		s.records[w.Resource] = storedRecord{rec: w.Record, modRev: s.rev}
		if s.onCommit != nil {
			s.onCommit(w.Resource, w.Record, s.rev)
		}
	}
	if w.Settings != nil {
		s.settings, s.setRev = *w.Settings, s.rev
	}
	for _, rw := range w.Requests {
		if rw.Entry == nil {
			delete(s.requests, rw.Key)
			continue
		}
		old, create := s.requests[rw.Key], s.rev
		if old.modRev != 0 {
			create = old.createRev
		}
		s.requests[rw.Key] = storedEntry{entry: rw.Entry, modRev: s.rev, createRev: create}
	}
	return registry.CommitResult{OK: true, Revision: s.rev}, nil
}

func (s *store) comparesHold(w registry.Write) bool {
	if w.Resource != "" && s.records[w.Resource].modRev != w.RecordRev {
		return false
	}
	if s.setRev != w.SettingsRev {
		return false
	}
	for _, rw := range w.Requests {
		if rw.Compare && s.requests[rw.Key].modRev != rw.ModRev {
			return false
		}
	}
	return true
}

// Watch is not used by the simulator: it steps the registry's waiting
// acquires (registry.Acquisition) on every commit itself (see
// registry.go). A closed channel tells a caller to fall back to Read.
func (s *store) Watch(ctx context.Context, resource string, fromRev uint64) (<-chan registry.RecordEvent, error) {
	ch := make(chan registry.RecordEvent)
	close(ch)
	return ch, nil
}

func (s *store) ScanRequests(ctx context.Context, after registry.RequestKey, limit int) ([]registry.RequestSlot, error) {
	keys := make([]registry.RequestKey, 0, len(s.requests))
	for k := range s.requests {
		if after.Less(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b registry.RequestKey) int {
		switch {
		case a.Less(b):
			return -1
		case b.Less(a):
			return 1
		}
		return 0
	})
	if len(keys) > limit {
		keys = keys[:limit]
	}
	return s.snapshot("", keys).Requests, nil
}

// ScanRecords lists nothing: the simulator lists no locks.
func (s *store) ScanRecords(context.Context, string, string, int) ([]registry.RecordSlot, error) {
	return nil, nil
}
