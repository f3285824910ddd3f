package zkstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// A record written without markers (by a version before them, or a
// replica still running one) is committed over by version, as before,
// and carries its marker from then on; a stray marker such a replica
// left behind is cleared.
func TestRecordWrittenWithoutIdentityTakesOne(t *testing.T) {
	server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := fmt.Sprintf("/test-%d", rootSeq.Add(1))
	old, err := New(ctx, testConn, root, nil, withoutIdentity)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := New(ctx, testConn, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	markers := func() []string {
		t.Helper()
		names, _, err := testConn.Children(cur.recordPath("legacy/x"))
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	commitFenceOn(t, ctx, old, "legacy/x", 1)
	if m := markers(); len(m) != 0 {
		t.Fatalf("markers %v under a record written without them", m)
	}
	commitFenceOn(t, ctx, cur, "legacy/x", 2)
	snap, err := cur.Read(ctx, "legacy/x", nil)
	if err != nil || snap.Record == nil || snap.Record.HighestFence != 2 {
		t.Fatalf("after the commit over a record without a marker: %+v, %v", snap.Record, err)
	}
	if m := markers(); !slices.Equal(m, []string{markName(snap.RecordRaw)}) {
		t.Fatalf("markers %v; want the record's own, %s", m, markName(snap.RecordRaw))
	}
	// The old version writes again (its marker stays, stale), then the
	// current one.
	commitFenceOn(t, ctx, old, "legacy/x", 3)
	commitFenceOn(t, ctx, cur, "legacy/x", 4)
	snap, err = cur.Read(ctx, "legacy/x", nil)
	if err != nil || snap.Record == nil || snap.Record.HighestFence != 4 {
		t.Fatalf("after the old version's write: %+v, %v", snap.Record, err)
	}
	if m := markers(); !slices.Equal(m, []string{markName(snap.RecordRaw)}) {
		t.Fatalf("markers %v; want only the record's own, %s", m, markName(snap.RecordRaw))
	}
	// A commit that only pins the record checks its marker.
	w := registry.Write{Resource: "legacy/x", RecordRev: snap.RecordRev, RecordWas: snap.Record, RecordWasRaw: snap.RecordRaw,
		Requests: []registry.RequestWrite{{Key: lockstate.RequestKey{Owner: "o", RequestID: "r"}, Entry: &lockstate.RequestEntry{ParamsDigest: "d"}}}}
	if res, err := cur.Commit(ctx, w); err != nil || !res.OK {
		t.Fatalf("a commit pinning the marked record: %+v, %v", res, err)
	}
	// With the marker gone (what a leader of another history shows), the
	// pin fails and the member, holding none, takes the record as
	// unmarked again: no false report.
	if err := testConn.Delete(cur.recordPath("legacy/x")+"/"+markName(snap.RecordRaw), -1); err != nil {
		t.Fatal(err)
	}
	w.Requests[0].Key.RequestID = "r2"
	if res, err := cur.Commit(ctx, w); err != nil || !res.OK {
		t.Fatalf("a commit pinning a record whose marker is gone: %+v, %v", res, err)
	}
	if m := markers(); !slices.Equal(m, []string{markName(snap.RecordRaw)}) {
		t.Fatalf("markers %v; want the record's own again", m)
	}
}

// The multi's refused op is the one the commit reads its identity from.
func TestRefusalNamesTheRecordsIdentity(t *testing.T) {
	s := freshStore(t)
	ctx := context.Background()
	w := registry.Write{Resource: "id/x", Record: &lockstate.Record{HighestFence: 1}}
	v, err := s.readView(ctx, s.commitPaths(w, nil), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := s.ops(w, v, nil)
	if _, refused, err := s.multi(ctx, ops); err != nil || refused != nil {
		t.Fatalf("create: %+v, %v", refused, err)
	}
	data, st, err := testConn.Get(s.recordPath("id/x"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err = s.readView(ctx, s.commitPaths(w, nil), nil, true); err != nil {
		t.Fatal(err)
	}
	v.nodes[s.recordPath("id/x")] = node{ok: true, data: []byte("another history's record"), stat: *st}
	if string(data) == "another history's record" {
		t.Fatal("the record read is the made-up one")
	}
	ops, _ = s.ops(w, v, nil)
	_, refused, err := s.multi(ctx, ops)
	if err != nil || refused == nil || refused.at != identityOpAt || !isMarkerOp(ops[identityOpAt]) || refused.err != zk.ErrNoNode {
		t.Fatalf("a pin of the right version with other contents: refused %+v, %v; want the marker op (%d) refused with no node", refused, err, identityOpAt)
	}
}
