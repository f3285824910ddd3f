package zkstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
)

// keyHistoryNode holds the gate key history (registry.KeyHistory); New
// makes it empty (none yet), as it makes the settings node.
const keyHistoryNode = "/keyhistory"

func (s *Store) keyHistoryPath() string { return s.root + keyHistoryNode }

// ReadKeyHistory implements registry.Store: a synced, consistent read
// (readView) of the one node.
func (s *Store) ReadKeyHistory(ctx context.Context) (registry.KeyHistorySlot, error) {
	v, err := s.readView(ctx, []string{s.keyHistoryPath()}, nil, true)
	if err != nil {
		return registry.KeyHistorySlot{}, fmt.Errorf("zkstore: read key history: %w", err)
	}
	return s.keyHistorySlot(v)
}

func (s *Store) keyHistorySlot(v *view) (registry.KeyHistorySlot, error) {
	slot := registry.KeyHistorySlot{Revision: v.rev}
	n := v.nodes[s.keyHistoryPath()]
	if n.modRev() == 0 {
		return slot, nil
	}
	h, err := registry.DecodeKeyHistory(n.data)
	if err != nil {
		return slot, fmt.Errorf("zkstore: %w", err)
	}
	slot.History, slot.Raw, slot.ModRev = h, n.data, n.modRev()
	return slot, nil
}

// CommitKeyHistory implements registry.Store as Commit does: decide the
// compare on a synced read of the node, then one multi that writes it at
// the version read (or creates it, when missing) and sets <root>/rev, so
// it applies only on the contents the compare was decided on; a multi
// refused by its pin is decided again.
func (s *Store) CommitKeyHistory(ctx context.Context, w registry.KeyHistoryWrite) (registry.KeyHistoryResult, error) {
	if w.History == nil {
		return registry.KeyHistoryResult{}, fmt.Errorf("zkstore: key history write without a history")
	}
	p, data := s.keyHistoryPath(), registry.EncodeKeyHistory(w.History)
	for range commitAttemptsMax {
		v, err := s.readView(ctx, []string{p}, nil, true)
		if err != nil {
			return registry.KeyHistoryResult{}, fmt.Errorf("zkstore: commit key history: read: %w", err)
		}
		n := v.nodes[p]
		if held := n.modRev() == 0 && w.WasRaw == nil || n.modRev() != 0 && w.WasRaw != nil && bytes.Equal(n.data, w.WasRaw); !held {
			cur, err := s.keyHistorySlot(v)
			return registry.KeyHistoryResult{Current: cur}, err
		}
		rev, refused, err := s.multi(ctx, []any{pin(p, n, data, true, s.acl), &zk.SetDataRequest{Path: s.revPath(), Version: -1}})
		switch {
		case err != nil:
			return registry.KeyHistoryResult{}, err
		case refused == nil:
			return registry.KeyHistoryResult{OK: true, Revision: uint64(rev.stat.Mzxid)}, nil
		}
	}
	return registry.KeyHistoryResult{}, fmt.Errorf("%w: key history, after %d multis", ErrContended, commitAttemptsMax)
}
