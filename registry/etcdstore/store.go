// Package etcdstore is the registry.Store over etcd (go.etcd.io/etcd/client/v3):
// one key per resource record, one per request ID and one for the
// registry-wide settings, under a prefix. Every Commit is one etcd
// transaction comparing mod revisions; its else branch reads the compared
// keys back, so a lost race costs no extra round trip. It also starts an
// embedded single-member etcd (embedded.go) for `fencegate serve`.
package etcdstore

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/registry"
)

// DefaultPrefix is where the registry's keys live unless told otherwise.
const DefaultPrefix = "/fencegate/"

// Key layout under the prefix. '#' separates owner and request ID: it is
// in neither alphabet and sorts below every character they use, so key
// order is (owner, request ID) order.
const (
	recordDir   = "r/"
	requestDir  = "q/"
	settingsKey = "settings"
)

// Store is a registry.Store over an etcd client. Several registries (and
// several fencegate serve replicas) may share one etcd and one prefix.
type Store struct {
	c      *clientv3.Client
	prefix string
}

var _ registry.Store = (*Store)(nil)

// New returns a store using c under prefix ("" means DefaultPrefix). The
// caller keeps ownership of c.
func New(c *clientv3.Client, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Store{c: c, prefix: prefix}
}

func (s *Store) recordKey(resource string) string { return s.prefix + recordDir + resource }
func (s *Store) settingsKey() string              { return s.prefix + settingsKey }
func (s *Store) requestKey(k registry.RequestKey) string {
	return s.prefix + requestDir + k.Owner + "#" + k.RequestID
}

// readOps are the gets of a snapshot, in the order parseSnapshot expects.
func (s *Store) readOps(resource string, keys []registry.RequestKey) []clientv3.Op {
	var ops []clientv3.Op
	if resource != "" {
		ops = append(ops, clientv3.OpGet(s.recordKey(resource)))
	}
	ops = append(ops, clientv3.OpGet(s.settingsKey()))
	for _, k := range keys {
		ops = append(ops, clientv3.OpGet(s.requestKey(k)))
	}
	return ops
}

// Read implements registry.Store: one read-only transaction, so every get
// sees the same revision; etcd serves it linearizably by default.
func (s *Store) Read(ctx context.Context, resource string, keys []registry.RequestKey) (registry.Snapshot, error) {
	resp, err := s.c.Txn(ctx).Then(s.readOps(resource, keys)...).Commit()
	if err != nil {
		return registry.Snapshot{}, fmt.Errorf("etcdstore: read: %w", err)
	}
	return parseSnapshot(resp, resource, keys)
}

// Commit implements registry.Store.
func (s *Store) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if (w.Record != nil || w.RecordWas != nil) && w.Resource == "" {
		return registry.CommitResult{}, fmt.Errorf("etcdstore: record write without a resource")
	}
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	if w.Resource != "" {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.recordKey(w.Resource)), "=", int64(w.RecordRev)))
	}
	if w.RecordWas != nil {
		cmps = append(cmps, clientv3.Compare(clientv3.Value(s.recordKey(w.Resource)), "=", string(registry.EncodeRecord(w.RecordWas))))
	}
	cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.settingsKey()), "=", int64(w.SettingsRev)))
	if w.SettingsWas != nil {
		cmps = append(cmps, clientv3.Compare(clientv3.Value(s.settingsKey()), "=", string(registry.EncodeSettings(w.SettingsWas))))
	}
	if w.Record != nil {
		ops = append(ops, clientv3.OpPut(s.recordKey(w.Resource), string(registry.EncodeRecord(w.Record))))
	}
	if w.Settings != nil {
		ops = append(ops, clientv3.OpPut(s.settingsKey(), string(registry.EncodeSettings(w.Settings))))
	}
	for _, rw := range w.Requests {
		k := s.requestKey(rw.Key)
		if rw.Compare {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", int64(rw.ModRev)))
		}
		if rw.Entry == nil {
			ops = append(ops, clientv3.OpDelete(k))
		} else {
			ops = append(ops, clientv3.OpPut(k, string(registry.EncodeRequestEntry(rw.Entry))))
		}
	}
	resp, err := s.c.Txn(ctx).If(cmps...).Then(ops...).Else(s.readOps(w.Resource, w.ReadKeys)...).Commit()
	if err != nil {
		return registry.CommitResult{}, fmt.Errorf("etcdstore: commit: %w", err)
	}
	if resp.Succeeded {
		return registry.CommitResult{OK: true, Revision: uint64(resp.Header.Revision)}, nil
	}
	cur, err := parseSnapshot(resp, w.Resource, w.ReadKeys)
	return registry.CommitResult{Current: cur}, err
}

// parseSnapshot decodes the responses of readOps.
func parseSnapshot(resp *clientv3.TxnResponse, resource string, keys []registry.RequestKey) (registry.Snapshot, error) {
	snap := registry.Snapshot{Revision: uint64(resp.Header.Revision), Resource: resource}
	rs := resp.Responses
	if want := 1 + len(keys) + b2i(resource != ""); len(rs) != want {
		return snap, fmt.Errorf("etcdstore: %d responses, want %d", len(rs), want)
	}
	if resource != "" {
		if kvs := rs[0].GetResponseRange().Kvs; len(kvs) == 1 {
			rec, err := registry.DecodeRecord(kvs[0].Value)
			if err != nil {
				return snap, fmt.Errorf("etcdstore: %s: %w", resource, err)
			}
			snap.Record, snap.RecordRev = rec, uint64(kvs[0].ModRevision)
		}
		rs = rs[1:]
	}
	if kvs := rs[0].GetResponseRange().Kvs; len(kvs) == 1 {
		set, err := registry.DecodeSettings(kvs[0].Value)
		if err != nil {
			return snap, fmt.Errorf("etcdstore: %w", err)
		}
		snap.Settings, snap.SettingsRev = set, uint64(kvs[0].ModRevision)
	}
	for i, k := range keys {
		slot := registry.RequestSlot{Key: k}
		if kvs := rs[1+i].GetResponseRange().Kvs; len(kvs) == 1 {
			e, err := registry.DecodeRequestEntry(kvs[0].Value)
			if err != nil {
				return snap, fmt.Errorf("etcdstore: request %s: %w", k.RequestID, err)
			}
			slot.Entry, slot.ModRev, slot.CreateRev = e, uint64(kvs[0].ModRevision), uint64(kvs[0].CreateRevision)
		}
		snap.Requests = append(snap.Requests, slot)
	}
	return snap, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ScanRequests implements registry.Store.
func (s *Store) ScanRequests(ctx context.Context, after registry.RequestKey, limit int) ([]registry.RequestSlot, error) {
	dir := s.prefix + requestDir
	from := dir
	if after != (registry.RequestKey{}) {
		from = s.requestKey(after) + "\x00"
	}
	resp, err := s.c.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(dir)), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("etcdstore: scan: %w", err)
	}
	out := make([]registry.RequestSlot, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		name := strings.TrimPrefix(string(kv.Key), dir)
		i := strings.LastIndexByte(name, '#')
		if i < 0 {
			return nil, fmt.Errorf("etcdstore: scan: %w: key %q", registry.ErrCorrupt, kv.Key)
		}
		e, err := registry.DecodeRequestEntry(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: scan %q: %w", kv.Key, err)
		}
		out = append(out, registry.RequestSlot{
			Key: registry.RequestKey{Owner: name[:i], RequestID: name[i+1:]}, Entry: e,
			ModRev: uint64(kv.ModRevision), CreateRev: uint64(kv.CreateRevision),
		})
	}
	return out, nil
}
