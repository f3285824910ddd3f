// Package memstore is the in-memory registry.Store: one mutex, one revision
// counter, values kept in their stored form (registry.StoredForm) so
// decoding is as strict as in etcd. It is linearizable because every call takes the mutex, and
// it passes testkit/storetest like the etcd and ZooKeeper stores.
//
// Beyond the Store contract it offers what tests and the deterministic
// simulator need of a store and etcd offers only to an operator: an Image
// of the whole state, a Restore of an image that reuses or keeps growing
// the revisions (RestoreKind: the two ways etcd restores a snapshot), and
// a commit hook (OnCommit) that sees every commit, in order, as stored.
package memstore

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// item is one stored value with its revisions.
type item struct {
	value     []byte
	modRev    uint64
	createRev uint64
	// decoded is what value decodes to: a copy of the value written (the
	// stored types encode every field, TestCopiesAreTheDecoding), or, for
	// a value from elsewhere, its decoding on first read. Never changed
	// once set, never handed out: readers get copies (decoded.go).
	decoded any
}

// Store is a registry.Store in memory. The zero value is not usable; call New.
type Store struct {
	mu       sync.Mutex
	rev      uint64
	records  map[string]item
	names    names // the keys of records, in order (names.go)
	requests map[lockstate.RequestKey]item
	settings item
	keys     item                             // the gate key history (keyhistory.go)
	sweeps   map[sweepName]registry.SweepItem // the sweep index (sweep.go)
	watchers map[string][]*watcher
	hook     CommitHook // see OnCommit
	form     registry.StoredForm
	// recordsRead counts the names listing pages looked at (RecordsRead).
	recordsRead uint64
}

var _ registry.Store = (*Store)(nil)

// Option sets a store's options at New.
type Option func(*Store)

// WithStoredForm sets the form the store writes records and request
// entries in (it reads every form). Optional, defaults to
// registry.FormCompact.
func WithStoredForm(f registry.StoredForm) Option { return func(s *Store) { s.form = f } }

// New returns an empty store at revision 1, as etcd starts.
func New(opts ...Option) *Store {
	s := &Store{
		rev:      1,
		records:  make(map[string]item),
		requests: make(map[lockstate.RequestKey]item),
		sweeps:   make(map[sweepName]registry.SweepItem),
		watchers: make(map[string][]*watcher),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Revision returns the current revision.
func (s *Store) Revision() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

// Read implements registry.Store.
func (s *Store) Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return registry.Snapshot{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked(resource, keys)
}

func (s *Store) snapshotLocked(resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	snap := registry.Snapshot{Revision: s.rev, Resource: resource}
	if resource != "" {
		rec, it, err := s.recordLocked(resource)
		if err != nil {
			return registry.Snapshot{}, err
		}
		snap.Record, snap.RecordRev, snap.RecordRaw = rec, it.modRev, it.value
	}
	set, err := s.settingsLocked()
	if err != nil {
		return registry.Snapshot{}, err
	}
	snap.Settings, snap.SettingsRev = set, s.settings.modRev
	if len(keys) > 0 {
		snap.Requests = make([]registry.RequestSlot, 0, len(keys))
	}
	for _, k := range keys {
		e, it, err := s.requestLocked(k)
		if err != nil {
			return registry.Snapshot{}, err
		}
		snap.Requests = append(snap.Requests, registry.RequestSlot{Key: k, Entry: e, ModRev: it.modRev, CreateRev: it.createRev})
	}
	return snap, nil
}

// ReadSet implements registry.Store: every member's record, the settings
// and the entries under one hold of the mutex.
func (s *Store) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return registry.Snapshot{}, err
	}
	if err := registry.CheckSetNames(resources); err != nil {
		return registry.Snapshot{}, fmt.Errorf("memstore: read set: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setSnapshotLocked(resources, keys)
}

// setSnapshotLocked is snapshotLocked for a lock set: no Resource, the
// members' records in Members.
func (s *Store) setSnapshotLocked(resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	snap, err := s.snapshotLocked("", keys)
	if err != nil {
		return registry.Snapshot{}, err
	}
	snap.Members = make([]registry.MemberSlot, len(resources))
	for i, r := range resources {
		rec, it, err := s.recordLocked(r)
		if err != nil {
			return registry.Snapshot{}, err
		}
		snap.Members[i] = registry.MemberSlot{Resource: r, Record: rec, RecordRev: it.modRev, RecordRaw: it.value}
	}
	return snap, nil
}

// memberNames lists a set write's members, in its order.
func memberNames(w *registry.Write) []string {
	names := make([]string, len(w.Members))
	for i, m := range w.Members {
		names[i] = m.Resource
	}
	return names
}

// Commit implements registry.Store.
func (s *Store) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return registry.CommitResult{}, err
	}
	if err := checkWrite(w); err != nil {
		return registry.CommitResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.comparesHoldLocked(w) {
		if len(w.Members) > 0 {
			cur, err := s.setSnapshotLocked(memberNames(&w), w.ReadKeys)
			return registry.CommitResult{Current: cur}, err
		}
		cur, err := s.snapshotLocked(w.Resource, w.ReadKeys)
		return registry.CommitResult{Current: cur}, err
	}
	s.rev++
	rev := s.rev
	if w.Record != nil {
		s.putRecordLocked(w.Resource, w.Record, rev)
	}
	for _, m := range w.Members {
		if m.Record != nil {
			s.putRecordLocked(m.Resource, m.Record, rev)
		}
	}
	if w.Settings != nil {
		s.settings = put(s.settings, registry.EncodeSettings(w.Settings), *w.Settings, rev)
	}
	for _, rw := range w.Requests {
		if rw.Entry == nil {
			delete(s.requests, rw.Key)
			continue
		}
		e := *rw.Entry
		s.requests[rw.Key] = put(s.requests[rw.Key], s.form.EncodeRequestEntry(rw.Entry), &e, rev)
	}
	s.applySweepsLocked(&w)
	s.runHookLocked(&w, rev)
	return registry.CommitResult{OK: true, Revision: rev}, nil
}

// putRecordLocked writes resource's record at rev and tells its watchers.
func (s *Store) putRecordLocked(resource string, rec *lockstate.Record, rev uint64) {
	if _, ok := s.records[resource]; !ok {
		s.names.insert(resource)
	}
	s.records[resource] = put(s.records[resource], s.form.EncodeRecord(rec), cloneRecord(rec), rev)
	s.notifyLocked(resource, rec, rev)
}

// checkWrite rejects writes etcd would reject too: a record without a
// resource, one key written twice, a malformed set (registry.CheckMembers).
func checkWrite(w registry.Write) error {
	if w.Record != nil && w.Resource == "" {
		return fmt.Errorf("memstore: record write without a resource")
	}
	if err := registry.CheckMembers(w); err != nil {
		return fmt.Errorf("memstore: commit: %w", err)
	}
	seen := make(map[lockstate.RequestKey]bool, len(w.Requests))
	for _, rw := range w.Requests {
		if seen[rw.Key] {
			return fmt.Errorf("memstore: request %s/%s written twice in one commit", rw.Key.Owner, rw.Key.RequestID)
		}
		seen[rw.Key] = true
	}
	items := make(map[sweepName]bool, len(w.Sweeps))
	for _, sw := range w.Sweeps {
		n := nameOfItem(sw.Item)
		if items[n] {
			return fmt.Errorf("memstore: sweep item %d %s/%s written twice in one commit", n.atMs, n.key[0], n.key[1])
		}
		items[n] = true
	}
	return nil
}

func (s *Store) comparesHoldLocked(w registry.Write) bool {
	// Contents, where the write names them, instead of revisions
	// (registry.Write), as etcdstore compares.
	if w.Resource != "" || w.RecordWas != nil {
		if !s.recordHoldsLocked(w.Resource, w.RecordRev, w.RecordWas, w.RecordWasRaw) {
			return false
		}
	}
	for _, m := range w.Members {
		if !s.recordHoldsLocked(m.Resource, m.RecordRev, m.RecordWas, m.RecordWasRaw) {
			return false
		}
	}
	if w.SettingsWas != nil {
		if !holds(s.settings, *w.SettingsWas, func(b []byte) bool { return bytes.Equal(b, registry.EncodeSettings(w.SettingsWas)) }) {
			return false
		}
	} else if s.settings.modRev != w.SettingsRev {
		return false
	}
	for _, rw := range w.Requests {
		if rw.Compare && s.requests[rw.Key].modRev != rw.ModRev {
			return false
		}
	}
	return true
}

// recordHoldsLocked decides the compare of one record: its contents when
// was is named, else its mod revision (0: absent).
func (s *Store) recordHoldsLocked(resource string, rev uint64, was *lockstate.Record, wasRaw []byte) bool {
	if was != nil {
		return holds(s.records[resource], was, func(b []byte) bool { return registry.StoredRecordIs(b, was, wasRaw) })
	}
	return s.records[resource].modRev == rev
}

// put writes value, whose decoding is decoded, over old, keeping old's
// create revision if it existed.
func put(old item, value []byte, decoded any, rev uint64) item {
	create := old.createRev
	if old.modRev == 0 {
		create = rev
	}
	return item{value: value, decoded: decoded, modRev: rev, createRev: create}
}

// holds reports whether it stores was (a write's RecordWas or
// SettingsWas), as etcd's compare of the stored bytes would. Equal values
// encode alike, so a value equal to the stored one's decoding holds
// without being encoded (the common case: what a write was decided on is
// usually what the store holds); for any other, matches compares the
// stored bytes.
func holds[T any](it item, was T, matches func(stored []byte) bool) bool {
	if it.modRev == 0 {
		return false
	}
	if d, ok := it.decoded.(T); ok && reflect.DeepEqual(d, was) {
		return true
	}
	return matches(it.value)
}

// ScanRequests implements registry.Store.
func (s *Store) ScanRequests(ctx context.Context, after lockstate.RequestKey, limit int) ([]registry.RequestSlot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]lockstate.RequestKey, 0, len(s.requests))
	for k := range s.requests {
		if after.Less(k) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	if len(keys) > limit {
		keys = keys[:limit]
	}
	snap, err := s.snapshotLocked("", keys)
	return snap.Requests, err
}

// RecordsRead is how many names listing pages (ScanRecords) have looked
// at: about their limits, whatever the number of records.
func (s *Store) RecordsRead() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recordsRead
}

// ScanRecords implements registry.Store: a page looks at the names it
// lists and one more (names.scan), found by binary search.
func (s *Store) ScanRecords(ctx context.Context, prefix, after string, limit int) ([]registry.RecordSlot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	if limit > 0 {
		s.recordsRead += uint64(s.names.scan(prefix, after, func(name string) bool {
			names = append(names, name)
			return len(names) < limit
		}))
	}
	out := make([]registry.RecordSlot, 0, len(names))
	for _, name := range names {
		rec, it, err := s.recordLocked(name)
		if err != nil {
			return nil, err
		}
		out = append(out, registry.RecordSlot{Resource: name, Record: rec, ModRev: it.modRev})
	}
	return out, nil
}
