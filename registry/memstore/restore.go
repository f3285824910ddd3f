package memstore

import (
	"maps"
	"slices"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// Image is a store's whole state at one revision, as a backup holds it:
// every record, request entry, the settings, the gate key history and the
// sweep index, with their revisions.
// An image never changes once taken, and may be restored any number of
// times, into the store it came from or another.
type Image struct {
	rev      uint64
	records  map[string]item
	requests map[lockstate.RequestKey]item
	settings item
	keys     item
	sweeps   map[sweepName]registry.SweepItem
}

// Image returns the store's current state. Stored values are never
// changed in place, so the image shares them.
func (s *Store) Image() *Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Image{rev: s.rev, records: maps.Clone(s.records), requests: maps.Clone(s.requests), settings: s.settings, keys: s.keys, sweeps: maps.Clone(s.sweeps)}
}

// RestoreKind is what a restore does to the revision counter, the one
// thing the two ways etcd restores a snapshot differ in.
type RestoreKind int

const (
	// ReuseRevisions puts the counter back to the image's revision, as
	// etcdutl snapshot restore without --bump-revision does: the
	// revisions written since the image are handed out again, to other
	// contents. A registry that cached a record before the restore sees
	// its revision come back with other contents; only the content
	// compares of registry.Write (RecordWas, SettingsWas) keep it from
	// committing a decision made on the record it cached.
	ReuseRevisions RestoreKind = iota
	// BumpRevisions keeps the counter going: the restored state is one
	// revision above every revision the store has handed out, as with
	// --bump-revision (or an operator loading a backup into a live
	// cluster). No revision ever names two contents; the data, fences
	// inside the records included, still goes back.
	BumpRevisions
)

// String names the kind as the simulator's trace and reports do.
func (k RestoreKind) String() string {
	if k == BumpRevisions {
		return "bump-revisions"
	}
	return "reuse-revisions"
}

// Restore replaces the store's state with img's, its revisions as kind
// says. Items keep the mod and create revisions they had in img. Open
// watches stay open and report later changes; no commit hook runs (a
// restore is not a commit). Tests use it to show that nothing a registry
// cached before the restore is committed on a revision alone, and the
// simulator to make a registry go backwards.
func (s *Store) Restore(img *Image, kind RestoreKind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rev := img.rev
	if kind == BumpRevisions {
		rev = max(s.rev, img.rev) + 1
	}
	s.rev, s.records, s.requests, s.settings, s.keys = rev, maps.Clone(img.records), maps.Clone(img.requests), img.settings, img.keys
	s.sweeps = maps.Clone(img.sweeps)
	s.names = namesOf(slices.Collect(maps.Keys(s.records)))
}
