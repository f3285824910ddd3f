package memstore

import (
	"slices"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// Every stored value is kept twice: in its stored form (the bytes etcd
// would hold, which a content compare and an Image use) and decoded. The
// decoding is a copy of the value the commit wrote (the stored types
// encode every field, so it is what decoding the stored form gives:
// TestCopiesAreTheDecoding), or, for a value that came in some other way,
// the strict decoding of its stored form, made on first read. Readers get
// their own copies of it: a reader that changes what it was given changes
// nothing stored, and a read costs a copy, not a decode (the simulator
// reads on nearly every registry call).

// recordLocked returns resource's record (a copy) and its item.
func (s *Store) recordLocked(resource string) (*lockstate.Record, item, error) {
	it, ok := s.records[resource]
	if !ok {
		return nil, it, nil
	}
	rec, ok := it.decoded.(*lockstate.Record)
	if !ok {
		var err error
		if rec, err = registry.DecodeRecord(it.value); err != nil {
			return nil, it, err
		}
		it.decoded = rec
		s.records[resource] = it
	}
	return cloneRecord(rec), it, nil
}

// requestLocked returns key's request entry (a copy) and its item.
func (s *Store) requestLocked(key lockstate.RequestKey) (*lockstate.RequestEntry, item, error) {
	it, ok := s.requests[key]
	if !ok {
		return nil, it, nil
	}
	e, ok := it.decoded.(*lockstate.RequestEntry)
	if !ok {
		var err error
		if e, err = registry.DecodeRequestEntry(it.value); err != nil {
			return nil, it, err
		}
		it.decoded = e
		s.requests[key] = it
	}
	c := *e // flat: no pointer, slice or map (TestCopiesShareNothing)
	return &c, it, nil
}

// settingsLocked returns the settings (a value) and their item.
func (s *Store) settingsLocked() (lockstate.Settings, error) {
	if s.settings.modRev == 0 {
		return lockstate.Settings{}, nil
	}
	set, ok := s.settings.decoded.(lockstate.Settings)
	if !ok {
		var err error
		if set, err = registry.DecodeSettings(s.settings.value); err != nil {
			return lockstate.Settings{}, err
		}
		s.settings.decoded = set
	}
	return set, nil
}

// cloneRecord copies rec so that the copy shares nothing with it. Its
// fields are values but for Holder, Waiters and Ended, whose elements are
// values (TestCopiesShareNothing fails when a field that would be shared
// is added).
func cloneRecord(rec *lockstate.Record) *lockstate.Record {
	c := *rec
	if rec.Holder != nil {
		h := *rec.Holder
		h.Members = slices.Clone(h.Members)
		c.Holder = &h
	}
	c.Waiters = slices.Clone(rec.Waiters)
	for i := range c.Waiters {
		c.Waiters[i].Members = slices.Clone(c.Waiters[i].Members)
	}
	c.Ended = slices.Clone(rec.Ended)
	c.Readers = slices.Clone(rec.Readers)
	for i := range c.Readers {
		c.Readers[i].Members = slices.Clone(c.Readers[i].Members)
	}
	return &c
}
