package memstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/fencegate/fencegate/registry"
)

// ReadKeyHistory implements registry.Store.
func (s *Store) ReadKeyHistory(ctx context.Context) (registry.KeyHistorySlot, error) {
	if err := ctx.Err(); err != nil {
		return registry.KeyHistorySlot{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyHistoryLocked()
}

// keyHistoryLocked returns the history as stored now. Its stored bytes
// are never changed in place, so the slot may share them.
func (s *Store) keyHistoryLocked() (registry.KeyHistorySlot, error) {
	slot := registry.KeyHistorySlot{Revision: s.rev}
	if s.keys.modRev == 0 {
		return slot, nil
	}
	h, err := registry.DecodeKeyHistory(s.keys.value)
	if err != nil {
		return slot, err
	}
	slot.History, slot.Raw, slot.ModRev = h, s.keys.value, s.keys.modRev
	return slot, nil
}

// CommitKeyHistory implements registry.Store.
func (s *Store) CommitKeyHistory(ctx context.Context, w registry.KeyHistoryWrite) (registry.KeyHistoryResult, error) {
	if err := ctx.Err(); err != nil {
		return registry.KeyHistoryResult{}, err
	}
	if w.History == nil {
		return registry.KeyHistoryResult{}, fmt.Errorf("memstore: key history write without a history")
	}
	value := registry.EncodeKeyHistory(w.History)
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.keys.modRev != 0 && w.WasRaw != nil && bytes.Equal(s.keys.value, w.WasRaw) ||
		s.keys.modRev == 0 && w.WasRaw == nil
	if !held {
		cur, err := s.keyHistoryLocked()
		return registry.KeyHistoryResult{Current: cur}, err
	}
	s.rev++
	s.keys = put(s.keys, value, nil, s.rev)
	if s.hook != nil {
		c := &Committed{Revision: s.rev, KeyHistoryWritten: true, s: s}
		s.hook(c)
		c.s = nil
	}
	return registry.KeyHistoryResult{OK: true, Revision: s.rev}, nil
}
