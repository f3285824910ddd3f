package etcdstore

import (
	"context"
	"errors"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// The store builds etcd's protocol messages itself and sends them on the
// client's connection (its interceptors included): clientv3's Op and Cmp
// builders copy every key and value once more, which at one write per
// lock operation is a tenth of the registry's CPU.

// txn sends one transaction; errors read as clientv3's do (rpctypes, or
// the context's own error once it ended), NOSPACE also as
// wire.ErrStoreFull.
func (s *Store) txn(ctx context.Context, req *pb.TxnRequest) (*pb.TxnResponse, error) {
	resp, err := s.kv.Txn(ctx, req, grpc.WaitForReady(true))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			// The member's own request timeout, not the caller's: over
			// gRPC it arrives as a status, and so it does in process.
			err = status.FromContextError(err).Err()
		}
		return nil, fullError(rpctypes.Error(err))
	}
	return resp, nil
}

// writeTxn is one Write as an etcd transaction: the compares, the writes
// when they hold, the reads of the fresh snapshot when they do not. The
// settings compare is kept apart (setCmp): writes in one group that
// expect the same settings share one (batch.go).
type writeTxn struct {
	cmps   []*pb.Compare // but the settings'
	setCmp *pb.Compare
	setRev uint64        // what setCmp expects: this revision, unless setVal is set
	setVal []byte        // these contents (registry.Write.SettingsWas)
	setGet *pb.RequestOp // the settings' get: first in a lone write's else branch
	then   []*pb.RequestOp
	els    []*pb.RequestOp // the snapshot's reads but the settings' (ownReadOps)
	size   int             // bytes of keys and values written
}

// request is the write as a transaction of its own: it compares the
// settings and its else branch reads them first (readOps' order).
func (t *writeTxn) request() *pb.TxnRequest {
	return &pb.TxnRequest{Compare: append([]*pb.Compare{t.setCmp}, t.cmps...), Success: t.then,
		Failure: append([]*pb.RequestOp{t.setGet}, t.els...)}
}

// nested is the write inside a group whose enclosing transaction has
// compared the settings and reads them once for every member.
func (t *writeTxn) nested() *pb.TxnRequest {
	return &pb.TxnRequest{Compare: t.cmps, Success: t.then, Failure: t.els}
}

func (s *Store) txnOf(w registry.Write) writeTxn {
	return s.txnWith(w, &keyMemo{s: s})
}

// txnWith is txnOf with the write's keys taken from (and left in) km,
// so each is built once for its compare, its put and its get.
func (s *Store) txnWith(w registry.Write, km *keyMemo) writeTxn {
	t := writeTxn{cmps: make([]*pb.Compare, 0, 2+len(w.Members)+len(w.Requests)), then: make([]*pb.RequestOp, 0, 1+len(w.Members)+len(w.Requests)+len(w.Sweeps))}
	// Contents, where the write names them, instead of revisions
	// (registry.Write): each compare is one more read of the key in etcd.
	// A value compare fails on an absent key.
	switch {
	case w.RecordWas != nil:
		was := w.RecordWasRaw
		if was == nil {
			was = s.encoded.was(s.form, w.Resource, w.RecordWas)
		}
		t.compareValue(km.record(w.Resource), was)
	case w.Resource != "":
		t.cmps = append(t.cmps, modRevIs(km.record(w.Resource), w.RecordRev))
	}
	for _, m := range w.Members {
		if m.RecordWas != nil {
			was := m.RecordWasRaw
			if was == nil {
				was = s.encoded.was(s.form, m.Resource, m.RecordWas)
			}
			t.compareValue(km.record(m.Resource), was)
		} else {
			t.cmps = append(t.cmps, modRevIs(km.record(m.Resource), m.RecordRev))
		}
	}
	sk := km.settings()
	if w.SettingsWas != nil {
		v := registry.EncodeSettings(w.SettingsWas)
		t.setCmp, t.setVal = valueIs(sk, v), v
		t.size += len(sk) + len(v)
	} else {
		t.setCmp, t.setRev = modRevIs(sk, w.SettingsRev), w.SettingsRev
	}
	if w.Record != nil {
		t.put(km.record(w.Resource), s.encoded.encode(s.form, w.Resource, w.Record))
	}
	for _, m := range w.Members {
		if m.Record != nil {
			t.put(km.record(m.Resource), s.encoded.encode(s.form, m.Resource, m.Record))
		}
	}
	if w.Settings != nil {
		t.put(sk, registry.EncodeSettings(w.Settings))
	}
	for _, rw := range w.Requests {
		k := km.request(rw.Key)
		if rw.Compare {
			t.cmps = append(t.cmps, modRevIs(k, rw.ModRev))
		}
		if rw.Entry == nil {
			t.then = append(t.then, deleteOp(k))
			t.size += len(k)
		} else {
			t.put(k, s.form.EncodeRequestEntry(rw.Entry))
		}
	}
	s.sweepOps(w, &t)
	t.setGet, t.els = get(sk), s.ownReadOpsWith(km, w.Resource, memberNames(w), w.ReadKeys)
	return t
}

// keyMemo builds each key of one write once, as the string the batcher
// orders commits by and the bytes etcd's messages carry; the write's
// compare, put and get of one key share the bytes (nothing writes to
// them: they are marshalled, or in process read, by etcd).
type keyMemo struct {
	s        *Store
	recs     [4]memoKey // by resource; a write of more records builds the rest again
	reqs     [4]memoKey // by request key
	nrecs    int
	nreqs    int
	settingB []byte
}

type memoKey struct {
	name lockstate.RequestKey // a record's: its resource in Owner
	str  string
	b    []byte
}

func (km *keyMemo) find(ks []memoKey, n *int, name lockstate.RequestKey, build func() string) memoKey {
	for _, k := range ks[:*n] {
		if k.name == name {
			return k
		}
	}
	str := build()
	k := memoKey{name: name, str: str, b: []byte(str)}
	if *n < len(ks) {
		ks[*n] = k
		*n++
	}
	return k
}

// recordKey is resource's record key.
func (km *keyMemo) recordKey(resource string) memoKey {
	return km.find(km.recs[:], &km.nrecs, lockstate.RequestKey{Owner: resource}, func() string { return km.s.recordKey(resource) })
}

// requestKey is k's request entry key.
func (km *keyMemo) requestKey(k lockstate.RequestKey) memoKey {
	return km.find(km.reqs[:], &km.nreqs, k, func() string { return km.s.requestKey(k) })
}

func (km *keyMemo) record(resource string) []byte         { return km.recordKey(resource).b }
func (km *keyMemo) request(k lockstate.RequestKey) []byte { return km.requestKey(k).b }

func (km *keyMemo) settings() []byte {
	if km.settingB == nil {
		km.settingB = []byte(km.s.settingsKey())
	}
	return km.settingB
}

// putMsg, getMsg, deleteOp and cmpOp are one request operation each in one
// allocation (the message, its oneof wrapper and its request), where
// building them apart costs three.
type putMsg struct {
	op  pb.RequestOp
	one pb.RequestOp_RequestPut
	req pb.PutRequest
}

type getMsg struct {
	op  pb.RequestOp
	one pb.RequestOp_RequestRange
	req pb.RangeRequest
}

type deleteMsg struct {
	op  pb.RequestOp
	one pb.RequestOp_RequestDeleteRange
	req pb.DeleteRangeRequest
}

func put(key, value []byte) *pb.RequestOp {
	p := &putMsg{}
	p.req.Key, p.req.Value = key, value
	p.one.RequestPut = &p.req
	p.op.Request = &p.one
	return &p.op
}

func deleteOp(key []byte) *pb.RequestOp {
	d := &deleteMsg{}
	d.req.Key = key
	d.one.RequestDeleteRange = &d.req
	d.op.Request = &d.one
	return &d.op
}

func (t *writeTxn) put(key, value []byte) {
	t.then = append(t.then, put(key, value))
	t.size += len(key) + len(value)
}

// compareValue requires key to hold exactly value: a revision alone can
// repeat after an etcd restore, the contents a decision read cannot
// (registry.Write.RecordWas). The bytes count toward the batch's size.
func (t *writeTxn) compareValue(key, value []byte) {
	t.cmps = append(t.cmps, valueIs(key, value))
	t.size += len(key) + len(value)
}

type valueCmp struct {
	c   pb.Compare
	val pb.Compare_Value
}

type modRevCmp struct {
	c   pb.Compare
	rev pb.Compare_ModRevision
}

func valueIs(key, value []byte) *pb.Compare {
	v := &valueCmp{}
	v.val.Value = value
	v.c = pb.Compare{Result: pb.Compare_EQUAL, Target: pb.Compare_VALUE, Key: key, TargetUnion: &v.val}
	return &v.c
}

func modRevIs(key []byte, rev uint64) *pb.Compare {
	m := &modRevCmp{}
	m.rev.ModRevision = int64(rev)
	m.c = pb.Compare{Result: pb.Compare_EQUAL, Target: pb.Compare_MOD, Key: key, TargetUnion: &m.rev}
	return &m.c
}

// opsAlone is how many operations etcd counts for the write sent alone
// (request): the most of its compares, its then branch and its else
// branch (etcd's checkTxnRequest; --max-txn-ops bounds it).
func (t *writeTxn) opsAlone() int {
	return max(1+len(t.cmps), len(t.then), 1+len(t.els))
}

// fits refuses, unsent, a write etcd would refuse for its operations
// (Options.TxnOpsMax): no store transaction can carry it.
func (s *Store) fits(t *writeTxn) error {
	if n := t.opsAlone(); n > s.txnOpsMax {
		return fmt.Errorf("etcdstore: commit: %w: %d operations in one branch (%d compares, %d writes, %d reads), over etcd's --max-txn-ops of %d (Options.TxnOpsMax); nothing was sent",
			registry.ErrTooLarge, n, 1+len(t.cmps), len(t.then), 1+len(t.els), s.txnOpsMax)
	}
	return nil
}

// memberNames lists a set write's members, in its order (nil for a plain
// write).
func memberNames(w registry.Write) []string {
	if len(w.Members) == 0 {
		return nil
	}
	names := make([]string, len(w.Members))
	for i, m := range w.Members {
		names[i] = m.Resource
	}
	return names
}

// readOps are the gets of a snapshot, in the order parseSnapshot
// expects: the settings, then ownReadOps.
func (s *Store) readOps(resource string, members []string, keys []lockstate.RequestKey) []*pb.RequestOp {
	km := &keyMemo{s: s}
	return append([]*pb.RequestOp{get(km.settings())}, s.ownReadOpsWith(km, resource, members, keys)...)
}

// ownReadOpsWith are the gets of a snapshot's record (when resource is
// set), its members' records (a lock set's) and request entries, their
// keys from km.
func (s *Store) ownReadOpsWith(km *keyMemo, resource string, members []string, keys []lockstate.RequestKey) []*pb.RequestOp {
	ops := make([]*pb.RequestOp, 0, 1+len(members)+len(keys))
	if resource != "" {
		ops = append(ops, get(km.record(resource)))
	}
	for _, m := range members {
		ops = append(ops, get(km.record(m)))
	}
	for _, k := range keys {
		ops = append(ops, get(km.request(k)))
	}
	return ops
}

func get(key []byte) *pb.RequestOp {
	g := &getMsg{}
	g.req.Key = key
	g.one.RequestRange = &g.req
	g.op.Request = &g.one
	return &g.op
}

// commitOne sends w as its own etcd transaction.
func (s *Store) commitOne(ctx context.Context, w registry.Write, t *writeTxn) (registry.CommitResult, error) {
	resp, err := s.txn(ctx, t.request())
	if err != nil {
		return registry.CommitResult{}, fmt.Errorf("etcdstore: commit: %w", err)
	}
	return s.commitResult(w, uint64(resp.Header.Revision), resp.Succeeded, resp.Responses, nil)
}

// commitResult decodes one write's outcome: its transaction's revision,
// whether its compares held and, when not, the reads of its else branch
// (with the settings as the enclosing group read them, when it did).
func (s *Store) commitResult(w registry.Write, rev uint64, ok bool, rs []*pb.ResponseOp, settings *pb.RangeResponse) (registry.CommitResult, error) {
	if ok {
		return registry.CommitResult{OK: true, Revision: rev}, nil
	}
	cur, err := parseSnapshot(rev, rs, w.Resource, memberNames(w), w.ReadKeys, settings)
	return registry.CommitResult{Current: cur}, err
}
