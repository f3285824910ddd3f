package memstore

import (
	"maps"

	"github.com/fencegate/fencegate/registry"
)

// Image is a store's whole state at one revision, as a backup holds it.
type Image struct {
	rev      uint64
	records  map[string]item
	requests map[registry.RequestKey]item
	settings item
}

// Image returns the store's current state. Stored values are never
// changed in place, so the image shares them.
func (s *Store) Image() *Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Image{rev: s.rev, records: maps.Clone(s.records), requests: maps.Clone(s.requests), settings: s.settings}
}

// Restore puts the store back to img, revisions and all, as an etcd
// snapshot restore without --bump-revision does: the revisions written
// since img are handed out again, to different contents. Tests use it to
// show that nothing a registry cached before the restore is committed on
// a revision alone. Open watches stay open and report later changes.
func (s *Store) Restore(img *Image) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev, s.records, s.requests, s.settings = img.rev, maps.Clone(img.records), maps.Clone(img.requests), img.settings
}
