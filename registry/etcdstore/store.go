// Package etcdstore is the registry.Store over etcd (go.etcd.io/etcd/client/v3):
// one key per resource record, one per request ID and one for the
// registry-wide settings, under a prefix. Every Commit is one etcd
// transaction comparing mod revisions (commits in flight together share
// one, as nested transactions: batch.go); its else branch reads the
// compared keys back, so a lost race costs no extra round trip. It also
// starts an embedded single-member etcd (embedded.go) for `fencegate serve`.
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
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
	kv     etcdserverpb.KVClient // c's connection, without clientv3's request copies
	prefix string
	form   registry.StoredForm
	// encoded are the records last encoded for puts, so a write decided
	// on one compares those bytes without encoding it again (encoded.go).
	encoded encodedRecords
	batch   *batcher // nil: every commit is its own transaction
	// txnOpsMax is the most operations etcd takes in one branch of a
	// transaction (Options.TxnOpsMax).
	txnOpsMax int
	space     *Space // nil: no watch on the cluster's space (GuardSpace)
	// noStream is set once the cluster answered that it has no
	// RangeStream (stream.go).
	noStream noStream
	// recordsRead counts what bounded reads had the member read
	// (RecordsRead).
	recordsRead atomic.Uint64
}

var _ registry.Store = (*Store)(nil)

// New returns a store using c under prefix ("" means DefaultPrefix). The
// caller keeps ownership of c. Commits are grouped (Options) unless an
// option turns it off. A client without a gRPC connection (an in-process
// one) needs the Option Embedded.InProcess returns with it: without it
// the store's reads and commits fail with ErrNoConnection.
func New(c *clientv3.Client, prefix string, opts ...Option) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	s := &Store{c: c, prefix: prefix}
	o := Options{}
	for _, f := range opts {
		f(&o)
	}
	s.form, s.kv = o.Form, o.kv
	if s.kv == nil {
		s.kv = noConnection{}
		if conn := c.ActiveConnection(); conn != nil {
			s.kv = etcdserverpb.NewKVClient(conn)
		}
	}
	o = o.withDefaults()
	s.txnOpsMax = o.TxnOpsMax
	if o.BatchWritesMax > 1 {
		s.batch = newBatcher(s, o)
	}
	return s
}

// ErrNoConnection: New was given a client without a gRPC connection (an
// in-process client) and no Option saying how to reach its server.
var ErrNoConnection = errors.New("etcdstore: the client has no gRPC connection; an in-process client needs the Option Embedded.InProcess returns with it")

// noConnection is the KV client of a store whose client has none.
type noConnection struct{ etcdserverpb.KVClient }

func (noConnection) Txn(context.Context, *etcdserverpb.TxnRequest, ...grpc.CallOption) (*etcdserverpb.TxnResponse, error) {
	return nil, ErrNoConnection
}

func (noConnection) RangeStream(context.Context, *etcdserverpb.RangeRequest, ...grpc.CallOption) (etcdserverpb.KV_RangeStreamClient, error) {
	return nil, ErrNoConnection
}

func (s *Store) recordKey(resource string) string { return s.prefix + recordDir + resource }
func (s *Store) settingsKey() string              { return s.prefix + settingsKey }
func (s *Store) requestKey(k lockstate.RequestKey) string {
	return s.prefix + requestDir + k.Owner + "#" + k.RequestID
}

// Read implements registry.Store: one read-only transaction, so every get
// sees the same revision; etcd serves it linearizably by default.
func (s *Store) Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	resp, err := s.txn(ctx, &etcdserverpb.TxnRequest{Success: s.readOps(resource, nil, keys)})
	if err != nil {
		return registry.Snapshot{}, fmt.Errorf("etcdstore: read: %w", err)
	}
	return parseSnapshot(uint64(resp.Header.Revision), resp.Responses, resource, nil, keys, nil)
}

// ReadSet implements registry.Store: one read-only transaction, as Read,
// getting every member's record.
func (s *Store) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	if err := registry.CheckSetNames(resources); err != nil {
		return registry.Snapshot{}, fmt.Errorf("etcdstore: read set: %w", err)
	}
	ops := s.readOps("", resources, keys)
	if len(ops) > s.txnOpsMax {
		return registry.Snapshot{}, fmt.Errorf("etcdstore: read set: %w: %d gets, over etcd's --max-txn-ops of %d (Options.TxnOpsMax); nothing was sent",
			registry.ErrTooLarge, len(ops), s.txnOpsMax)
	}
	resp, err := s.txn(ctx, &etcdserverpb.TxnRequest{Success: ops})
	if err != nil {
		return registry.Snapshot{}, fmt.Errorf("etcdstore: read set: %w", err)
	}
	snap, err := parseSnapshot(uint64(resp.Header.Revision), resp.Responses, "", resources, keys, nil)
	if snap.Members == nil && err == nil {
		snap.Members = []registry.MemberSlot{}
	}
	return snap, err
}

// Commit implements registry.Store. Commits made while others are in
// flight share etcd transactions (batch.go); a lone commit goes at once.
func (s *Store) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if (w.Record != nil || w.RecordWas != nil) && w.Resource == "" {
		return registry.CommitResult{}, fmt.Errorf("etcdstore: record write without a resource")
	}
	if err := registry.CheckMembers(w); err != nil {
		return registry.CommitResult{}, fmt.Errorf("etcdstore: commit: %w", err)
	}
	low := s.space.Low()
	if low && registry.CreatesEntries(w) {
		return registry.CommitResult{}, fmt.Errorf("etcdstore: commit: %w: the store is near its quota (%s); no new grant until space is back: retry later (operators: %s)",
			wire.ErrStoreFull, s.space.describe(), spaceRunbook)
	}
	// Out of space, etcd takes a transaction without puts only: a write
	// that only deletes (the sweep's) goes alone, not grouped with puts
	// that would have the whole group refused.
	if s.batch == nil || w.Settings != nil || low && !putsAnything(w) {
		t := s.txnOf(w)
		if err := s.fits(&t); err != nil {
			return registry.CommitResult{}, err
		}
		return s.commitOne(ctx, w, &t)
	}
	return s.batch.commit(ctx, w)
}

// parseSnapshot decodes the responses of readOps, rev being the revision
// of the transaction that read them; or, when settings is not nil, of
// ownReadOps, with settings read apart at the same revision.
func parseSnapshot(rev uint64, rs []*etcdserverpb.ResponseOp, resource string, members []string, keys []lockstate.RequestKey, settings *etcdserverpb.RangeResponse) (registry.Snapshot, error) {
	snap := registry.Snapshot{Revision: rev, Resource: resource}
	if want := b2i(settings == nil) + len(keys) + b2i(resource != "") + len(members); len(rs) != want {
		return snap, fmt.Errorf("etcdstore: %d responses, want %d", len(rs), want)
	}
	if settings == nil {
		settings, rs = rs[0].GetResponseRange(), rs[1:]
	}
	if kvs := settings.GetKvs(); len(kvs) == 1 {
		set, err := registry.DecodeSettings(kvs[0].Value)
		if err != nil {
			return snap, fmt.Errorf("etcdstore: %w", err)
		}
		snap.Settings, snap.SettingsRev = set, uint64(kvs[0].ModRevision)
	}
	if resource != "" {
		if kvs := rs[0].GetResponseRange().Kvs; len(kvs) == 1 {
			rec, err := registry.DecodeRecord(kvs[0].Value)
			if err != nil {
				return snap, fmt.Errorf("etcdstore: %s: %w", resource, err)
			}
			snap.Record, snap.RecordRev, snap.RecordRaw = rec, uint64(kvs[0].ModRevision), kvs[0].Value
		}
		rs = rs[1:]
	}
	if len(members) > 0 {
		snap.Members = make([]registry.MemberSlot, len(members))
	}
	for i, m := range members {
		slot := registry.MemberSlot{Resource: m}
		if kvs := rs[i].GetResponseRange().Kvs; len(kvs) == 1 {
			rec, err := registry.DecodeRecord(kvs[0].Value)
			if err != nil {
				return snap, fmt.Errorf("etcdstore: %s: %w", m, err)
			}
			slot.Record, slot.RecordRev, slot.RecordRaw = rec, uint64(kvs[0].ModRevision), kvs[0].Value
		}
		snap.Members[i] = slot
	}
	rs = rs[len(members):]
	for i, k := range keys {
		slot := registry.RequestSlot{Key: k}
		if kvs := rs[i].GetResponseRange().Kvs; len(kvs) == 1 {
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

// rangeKeys reads up to limit keys in [from, end), linearizably as every
// etcd read is by default, at a cost bounded by limit (rangeFirst).
func (s *Store) rangeKeys(ctx context.Context, from, end string, limit int) ([]*mvccpb.KeyValue, error) {
	return s.rangeFirst(ctx, from, end, limit)
}

// ScanRecords implements registry.Store: one range read, linearizable
// as every etcd read is by default, whose cost is bounded by limit and
// not by the records after the page (rangeFirst).
func (s *Store) ScanRecords(ctx context.Context, prefix, after string, limit int) ([]registry.RecordSlot, error) {
	if limit <= 0 {
		return nil, nil
	}
	dir := s.prefix + recordDir
	from := dir + prefix
	if after != "" {
		from = dir + after + "\x00"
	}
	kvs, err := s.rangeFirst(ctx, from, clientv3.GetPrefixRangeEnd(dir+prefix), limit)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: scan records: %w", err)
	}
	out := make([]registry.RecordSlot, 0, len(kvs))
	for _, kv := range kvs {
		rec, err := registry.DecodeRecord(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: scan %q: %w", kv.Key, err)
		}
		out = append(out, registry.RecordSlot{Resource: strings.TrimPrefix(string(kv.Key), dir), Record: rec, ModRev: uint64(kv.ModRevision)})
	}
	return out, nil
}

// ScanRequests implements registry.Store.
func (s *Store) ScanRequests(ctx context.Context, after lockstate.RequestKey, limit int) ([]registry.RequestSlot, error) {
	dir := s.prefix + requestDir
	from := dir
	if after != (lockstate.RequestKey{}) {
		from = s.requestKey(after) + "\x00"
	}
	kvs, err := s.rangeFirst(ctx, from, clientv3.GetPrefixRangeEnd(dir), limit)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: scan: %w", err)
	}
	out := make([]registry.RequestSlot, 0, len(kvs))
	for _, kv := range kvs {
		name := strings.TrimPrefix(string(kv.Key), dir)
		i := strings.LastIndexByte(name, '#')
		if i < 0 {
			return nil, fmt.Errorf("etcdstore: scan: %w: key %q", wire.ErrCorrupt, kv.Key)
		}
		e, err := registry.DecodeRequestEntry(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: scan %q: %w", kv.Key, err)
		}
		out = append(out, registry.RequestSlot{
			Key: lockstate.RequestKey{Owner: name[:i], RequestID: name[i+1:]}, Entry: e,
			ModRev: uint64(kv.ModRevision), CreateRev: uint64(kv.CreateRevision),
		})
	}
	return out, nil
}
