// This file proves a lock-set write is counted as etcd counts it against
// --max-txn-ops: alone, the largest write that fits is taken and the next
// larger one is refused unsent (and etcd itself refuses it when sent);
// in a group, a write is admitted only where etcd takes its nested form.
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// setMembersMax is wire.LockSetMembersMax, the most members a lock set
// has (the store itself sets no bound but etcd's).
const setMembersMax = 16

// bigSet is a set write over setMembersMax members, each created, with
// entries request entries: compared absent (then its compares and puts
// both grow with them), or written blind (only its puts do).
func bigSet(prefix string, entries int, compared bool) registry.Write {
	var w registry.Write
	for i := range setMembersMax {
		w.Members = append(w.Members, registry.MemberWrite{Resource: fmt.Sprintf("%s/m%02d", prefix, i), Record: &lockstate.Record{HighestFence: 1}})
	}
	for i := range entries {
		w.Requests = append(w.Requests, registry.RequestWrite{Key: lockstate.RequestKey{Owner: prefix, RequestID: fmt.Sprint("r", i)}, Compare: compared,
			Entry: &lockstate.RequestEntry{ParamsDigest: "d"}})
	}
	return w
}

// TestSetWriteAtTxnOpsLimit: 16 members and 111 compared entries are 128
// compares (the settings' too): the store sends it and etcd takes it.
// One entry more is refused unsent with registry.ErrTooLarge, writing
// nothing; sent to etcd anyway (the control), etcd refuses it as too
// many operations, so the store's count is etcd's.
func TestSetWriteAtTxnOpsLimit(t *testing.T) {
	ctx := context.Background()
	for _, form := range []struct {
		name string
		opts []Option
	}{{"grouped", nil}, {"ungrouped", []Option{WithBatching(1, 0)}}} {
		t.Run(form.name, func(t *testing.T) {
			s := New(testClient, fmt.Sprintf("/test-%d/", prefixSeq.Add(1)), form.opts...)
			fits := bigSet("fits", TxnOpsMaxDefault-setMembersMax-1, true)
			if tx := s.txnOf(fits); tx.opsAlone() != TxnOpsMaxDefault {
				t.Fatalf("the fitting write counts %d operations, want %d", tx.opsAlone(), TxnOpsMaxDefault)
			}
			if res, err := s.Commit(ctx, fits); err != nil || !res.OK {
				t.Fatalf("a set write of exactly --max-txn-ops: %+v, %v", res, err)
			}
			over := bigSet("over", TxnOpsMaxDefault-setMembersMax, true)
			res, err := s.Commit(ctx, over)
			if !errors.Is(err, registry.ErrTooLarge) || res.OK {
				t.Fatalf("a set write one over --max-txn-ops: %+v, %v; want ErrTooLarge", res, err)
			}
			t.Logf("refused: %v", err)
			snap, err := s.ReadSet(ctx, []string{"over/m00", "over/m15"}, []lockstate.RequestKey{over.Requests[0].Key})
			if err != nil {
				t.Fatal(err)
			}
			if snap.Members[0].Record != nil || snap.Members[1].Record != nil || snap.Requests[0].Entry != nil {
				t.Fatal("the refused set write wrote something")
			}
			// Control: etcd refuses what the store refused.
			tx := s.txnOf(over)
			if _, err := s.txn(ctx, tx.request()); !errors.Is(err, rpctypes.ErrTooManyOps) {
				t.Fatalf("the over-limit write sent raw: %v; want etcd's too many operations", err)
			}
		})
	}
}

// TestReadSetOverTxnOpsIsRefusedUnsent: ReadSet's gets count too.
func TestReadSetOverTxnOpsIsRefusedUnsent(t *testing.T) {
	s := freshStore(t)
	keys := make([]lockstate.RequestKey, TxnOpsMaxDefault-setMembersMax)
	for i := range keys {
		keys[i] = lockstate.RequestKey{Owner: "o", RequestID: fmt.Sprint("r", i)}
	}
	names := bigSet("read", 0, false).Members
	members := make([]string, len(names))
	for i, m := range names {
		members[i] = m.Resource
	}
	if _, err := s.ReadSet(context.Background(), members, keys[:len(keys)-1]); err != nil {
		t.Fatalf("a ReadSet of exactly --max-txn-ops gets: %v", err)
	}
	if _, err := s.ReadSet(context.Background(), members, keys); !errors.Is(err, registry.ErrTooLarge) {
		t.Fatalf("a ReadSet one get over: %v; want ErrTooLarge", err)
	}
}

// TestGroupLeavesRoomForNestedSetWrite: a set write of 100 puts joins a
// group of 26 plain writes (27 nested transactions and the settings' get
// leave etcd room for 100 operations each) but not one of 27. Each group
// the admission forms is sent as one transaction that etcd takes; the
// group of 28 formed without the admission (the control) etcd refuses,
// and it is resent write by write.
func TestGroupLeavesRoomForNestedSetWrite(t *testing.T) {
	s := freshStore(t)
	big := bigSet("nest", 100-setMembersMax, false)
	if tx := s.txnOf(big); tx.opsAlone() != 100 {
		t.Fatalf("the set write counts %d operations, want 100", tx.opsAlone())
	}
	group := func(plain int, tag string) []*pending {
		var ws []registry.Write
		for i := range plain {
			ws = append(ws, registry.Write{Resource: fmt.Sprintf("%s/p%d", tag, i), Record: &lockstate.Record{HighestFence: 1}})
		}
		w := bigSet(tag, 100-setMembersMax, false)
		return groupOf(s, append(ws, w)...)
	}
	admitted := func(g []*pending) int {
		admit, n := s.batch.group(), 0
		for _, p := range g {
			if admit(p) {
				n++
			}
		}
		return n
	}
	fits, over := group(26, "fits"), group(27, "over")
	if n := admitted(fits); n != len(fits) {
		t.Fatalf("26 plain writes and the set write: %d admitted, want all %d", n, len(fits))
	}
	if n := admitted(over); n != len(over)-1 {
		t.Fatalf("27 plain writes and the set write: %d admitted, want the plain ones, %d", n, len(over)-1)
	}
	sent := func(g []*pending) uint64 {
		before := s.batch.txns.Load()
		s.batch.send(g)
		for _, p := range g {
			if p.err != nil || !p.res.OK {
				t.Fatalf("a write of the group: %+v, %v", p.res, p.err)
			}
		}
		return s.batch.txns.Load() - before
	}
	if n := sent(fits); n != 1 {
		t.Fatalf("the admitted group took %d transactions, want 1", n)
	}
	if n := sent(over); n != uint64(1+len(over)) {
		t.Fatalf("control: the group formed past the admission took %d transactions; want etcd to refuse it (1) and each write alone (%d)", n, len(over))
	}
}

// TestGroupedSetWriteFailsAlone: nested in a group whose settings compare
// is shared, a set write with one stale member fails alone (the plain
// write beside it commits), writes none of its members, and reads every
// member back from its own else branch, with the settings the group read.
func TestGroupedSetWriteFailsAlone(t *testing.T) {
	s := freshStore(t)
	ctx := context.Background()
	members := []string{"g/a", "g/b", "g/c"}
	var create registry.Write
	for _, m := range members {
		create.Members = append(create.Members, registry.MemberWrite{Resource: m, Record: &lockstate.Record{HighestFence: 1}})
	}
	if res, err := s.Commit(ctx, create); err != nil || !res.OK {
		t.Fatalf("create: %+v, %v", res, err)
	}
	snap, err := s.ReadSet(ctx, members, nil)
	if err != nil {
		t.Fatal(err)
	}
	var set registry.Write
	for i, m := range snap.Members {
		mw := registry.MemberWrite{Resource: m.Resource, RecordRev: m.RecordRev, Record: &lockstate.Record{HighestFence: 2}}
		if i == 1 {
			mw.RecordRev-- // stale
		}
		set.Members = append(set.Members, mw)
	}
	g := groupOf(s, registry.Write{Resource: "g/plain", Record: &lockstate.Record{HighestFence: 1}}, set)
	before := s.batch.txns.Load()
	s.batch.send(g)
	if n := s.batch.txns.Load() - before; n != 1 {
		t.Fatalf("the group took %d transactions, want 1", n)
	}
	if g[0].err != nil || !g[0].res.OK || g[1].err != nil || g[1].res.OK {
		t.Fatalf("outcomes: plain %+v %v, set %+v %v", g[0].res, g[0].err, g[1].res, g[1].err)
	}
	cur := g[1].res.Current
	if len(cur.Members) != len(members) || cur.Revision != g[0].res.Revision {
		t.Fatalf("current: %d members at %d, want %d at the group's revision %d", len(cur.Members), cur.Revision, len(members), g[0].res.Revision)
	}
	for i, m := range cur.Members {
		if m.Resource != members[i] || m.RecordRev != snap.Members[i].RecordRev || m.Record.HighestFence != 1 {
			t.Fatalf("current member %d: %s fence %d at %d", i, m.Resource, m.Record.HighestFence, m.RecordRev)
		}
	}
}
