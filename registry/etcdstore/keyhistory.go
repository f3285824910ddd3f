package etcdstore

import (
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/fencegate/fencegate/registry"
)

// keyHistoryKey holds the gate key history (registry.KeyHistory), beside
// the settings under the prefix.
const keyHistoryKey = "keyhistory"

func (s *Store) keyHistoryKey() string { return s.prefix + keyHistoryKey }

// ReadKeyHistory implements registry.Store: one get, linearizable as
// every etcd read is by default.
func (s *Store) ReadKeyHistory(ctx context.Context) (registry.KeyHistorySlot, error) {
	resp, err := s.txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{get([]byte(s.keyHistoryKey()))}})
	if err != nil {
		return registry.KeyHistorySlot{}, fmt.Errorf("etcdstore: read key history: %w", err)
	}
	return keyHistorySlot(uint64(resp.Header.Revision), resp.Responses)
}

// CommitKeyHistory implements registry.Store: one transaction comparing
// the stored bytes (or that the key was never created), putting the new
// history when they hold and reading it back when not. It does not join
// the commit batches: it is rare, and a lone transaction keeps its
// compare apart from every other write's.
func (s *Store) CommitKeyHistory(ctx context.Context, w registry.KeyHistoryWrite) (registry.KeyHistoryResult, error) {
	if w.History == nil {
		return registry.KeyHistoryResult{}, fmt.Errorf("etcdstore: key history write without a history")
	}
	key := s.keyHistoryKey()
	cmp := &pb.Compare{Result: pb.Compare_EQUAL, Target: pb.Compare_CREATE, Key: []byte(key),
		TargetUnion: &pb.Compare_CreateRevision{CreateRevision: 0}}
	if w.WasRaw != nil {
		cmp = valueIs([]byte(key), w.WasRaw)
	}
	put := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: registry.EncodeKeyHistory(w.History)}}}
	resp, err := s.txn(ctx, &pb.TxnRequest{Compare: []*pb.Compare{cmp}, Success: []*pb.RequestOp{put}, Failure: []*pb.RequestOp{get([]byte(key))}})
	if err != nil {
		return registry.KeyHistoryResult{}, fmt.Errorf("etcdstore: commit key history: %w", err)
	}
	rev := uint64(resp.Header.Revision)
	if resp.Succeeded {
		return registry.KeyHistoryResult{OK: true, Revision: rev}, nil
	}
	cur, err := keyHistorySlot(rev, resp.Responses)
	return registry.KeyHistoryResult{Current: cur}, err
}

// keyHistorySlot decodes the one get of the history at revision rev.
func keyHistorySlot(rev uint64, rs []*pb.ResponseOp) (registry.KeyHistorySlot, error) {
	slot := registry.KeyHistorySlot{Revision: rev}
	if len(rs) != 1 {
		return slot, fmt.Errorf("etcdstore: key history: %d responses, want 1", len(rs))
	}
	kvs := rs[0].GetResponseRange().GetKvs()
	if len(kvs) != 1 {
		return slot, nil
	}
	h, err := registry.DecodeKeyHistory(kvs[0].Value)
	if err != nil {
		return slot, fmt.Errorf("etcdstore: %w", err)
	}
	slot.History, slot.Raw, slot.ModRev = h, kvs[0].Value, uint64(kvs[0].ModRevision)
	return slot, nil
}
