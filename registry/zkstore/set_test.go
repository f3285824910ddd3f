// This file proves a lock-set write carries every member's identity
// marker (identity.go) as a plain write carries its record's: each
// member written gets its own, a member only compared has its checked, a
// member of another history is refused on its marker (and the refusal
// names that member), members written without markers take them, and
// the jute.maxbuffer bound covers the whole multi.
package zkstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// markersOf lists the children of resource's record node.
func markersOf(t *testing.T, s *Store, resource string) []string {
	t.Helper()
	names, _, err := testConn.Children(s.recordPath(resource))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// setOver is a set write over members decided on snap, writing fence to
// those in write and comparing the others.
func setOver(snap registry.Snapshot, fence uint64, write ...string) registry.Write {
	var w registry.Write
	for _, m := range snap.Members {
		mw := registry.MemberWrite{Resource: m.Resource, RecordRev: m.RecordRev}
		if m.Record != nil {
			mw.RecordWas, mw.RecordWasRaw = m.Record, m.RecordRaw
		}
		if slices.Contains(write, m.Resource) {
			mw.Record = &lockstate.Record{HighestFence: fence}
		}
		w.Members = append(w.Members, mw)
	}
	return w
}

func TestSetWriteMarksEveryMember(t *testing.T) {
	s := freshStore(t)
	ctx := context.Background()
	members := []string{"set/a", "set/b", "set/c"}
	snap, err := s.ReadSet(ctx, members, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Commit(ctx, setOver(snap, 1, members...)); err != nil || !res.OK {
		t.Fatalf("set create: %+v, %v", res, err)
	}
	if snap, err = s.ReadSet(ctx, members, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Members {
		if got := markersOf(t, s, m.Resource); !slices.Equal(got, []string{markName(m.RecordRaw)}) {
			t.Fatalf("%s: markers %v, want its own %s", m.Resource, got, markName(m.RecordRaw))
		}
	}
	// a and c written, b only compared: b's marker is checked, not moved.
	if res, err := s.Commit(ctx, setOver(snap, 2, "set/a", "set/c")); err != nil || !res.OK {
		t.Fatalf("set write: %+v, %v", res, err)
	}
	after, err := s.ReadSet(ctx, members, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range after.Members {
		if got := markersOf(t, s, m.Resource); !slices.Equal(got, []string{markName(m.RecordRaw)}) {
			t.Fatalf("%s: markers %v, want its own %s", m.Resource, got, markName(m.RecordRaw))
		}
		if written := i != 1; written == (m.RecordRev == snap.Members[i].RecordRev) {
			t.Fatalf("%s: revision %d, was %d", m.Resource, m.RecordRev, snap.Members[i].RecordRev)
		}
	}
	// With b's marker gone (what a leader of another history shows), the
	// set write's multi is refused on it; this member, holding no marker
	// either, takes b as written before markers and commits: no false
	// report, and b has its marker again.
	if err := testConn.Delete(s.recordPath("set/b")+"/"+markName(after.Members[1].RecordRaw), -1); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Commit(ctx, setOver(after, 3, "set/a")); err != nil || !res.OK {
		t.Fatalf("a set write pinning a member whose marker is gone: %+v, %v", res, err)
	}
	if got := markersOf(t, s, "set/b"); !slices.Equal(got, []string{markName(after.Members[1].RecordRaw)}) {
		t.Fatalf("set/b: markers %v after the commit, want its own again", got)
	}
}

// A member read as another history holds it (the same version, other
// contents) is refused on its marker, the refusal naming that member's
// record; without markers (the control) the multi would apply over it.
func TestSetRefusalNamesTheMembersIdentity(t *testing.T) {
	for _, marked := range []bool{true, false} {
		t.Run(fmt.Sprint("marked=", marked), func(t *testing.T) {
			server(t)
			ctx := context.Background()
			var opts []Option
			if !marked {
				opts = append(opts, withoutIdentity)
			}
			s, err := New(ctx, testConn, fmt.Sprintf("/test-%d", rootSeq.Add(1)), nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			members := []string{"fork/a", "fork/b", "fork/c"}
			snap, err := s.ReadSet(ctx, members, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res, err := s.Commit(ctx, setOver(snap, 1, members...)); err != nil || !res.OK {
				t.Fatalf("set create: %+v, %v", res, err)
			}
			if snap, err = s.ReadSet(ctx, members, nil); err != nil {
				t.Fatal(err)
			}
			w := setOver(snap, 2, members...)
			v, err := s.readView(ctx, s.commitPaths(w, nil), nil, true)
			if err != nil {
				t.Fatal(err)
			}
			p := s.recordPath("fork/b")
			n := v.nodes[p]
			n.data = []byte("another history's record")
			v.nodes[p] = n
			ops, markers := s.ops(w, v, nil)
			_, refused, err := s.multi(ctx, ops)
			if !marked {
				if err != nil || refused != nil {
					t.Fatalf("control: without markers the multi should apply over the other history's member: %+v, %v", refused, err)
				}
				return
			}
			if err != nil || refused == nil || !errors.Is(refused.err, zk.ErrNoNode) || markers[refused.at] != p || !isMarkerOp(ops[refused.at]) {
				t.Fatalf("refused %+v, %v (markers %v); want fork/b's marker op refused with no node", refused, err, markers)
			}
			if len(markers) != len(members) {
				t.Fatalf("%d marker ops for %d members", len(markers), len(members))
			}
		})
	}
}

// Members written by a version without markers take theirs on the first
// set write over them, sixteen of them too: a refusal on one member's
// marker has the others looked at as well (unmarkedBeside), where one
// member a multi would take more multis than commitAttemptsMax.
func TestSetOverUnmarkedMembers(t *testing.T) {
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
	var members []string
	for i := range 16 {
		members = append(members, fmt.Sprintf("legacy/%02d", i))
	}
	for _, m := range members {
		commitFenceOn(t, ctx, old, m, 1)
		if got := markersOf(t, cur, m); len(got) != 0 {
			t.Fatalf("%s: markers %v under a record written without them", m, got)
		}
	}
	snap, err := cur.ReadSet(ctx, members, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cur.Commit(ctx, setOver(snap, 2, members[:15]...)); err != nil || !res.OK {
		t.Fatalf("set write over unmarked members: %+v, %v", res, err)
	}
	after, err := cur.ReadSet(ctx, members, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range after.Members {
		if got := markersOf(t, cur, m.Resource); !slices.Equal(got, []string{markName(m.RecordRaw)}) {
			t.Fatalf("%s: markers %v, want its own %s", m.Resource, got, markName(m.RecordRaw))
		}
	}
}

// A set write whose multi may exceed jute.maxbuffer is refused unsent,
// as a plain one is, writing nothing; the same write fits the default.
func TestSetWriteAboveJuteMaxBufferIsRefused(t *testing.T) {
	server(t)
	ctx := context.Background()
	root := fmt.Sprintf("/test-%d", rootSeq.Add(1))
	small, err := New(ctx, testConn, root, nil, WithJuteMaxBuffer(JuteMaxBufferMin))
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for i := range 16 {
		members = append(members, fmt.Sprintf("big/%02d", i))
	}
	snap, err := small.ReadSet(ctx, members, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := setOver(snap, 1, members...)
	for i := range w.Members {
		w.Members[i].Record.Waiters = []lockstate.Waiter{{Owner: strings.Repeat("o", 300), RequestID: "r"}}
	}
	res, err := small.Commit(ctx, w)
	if !errors.Is(err, registry.ErrTooLarge) || !errors.Is(err, wire.ErrStoreFull) || res.OK {
		t.Fatalf("a set write over jute.maxbuffer: %+v, %v; want ErrTooLarge and ErrStoreFull", res, err)
	}
	if after, err := small.ReadSet(ctx, members, nil); err != nil || after.Members[0].Record != nil || after.Members[15].Record != nil {
		t.Fatalf("the refused set write wrote: %+v, %v", after.Members, err)
	}
	big, err := New(ctx, testConn, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := big.Commit(ctx, w); err != nil || !res.OK {
		t.Fatalf("control: the same set write under the default jute.maxbuffer: %+v, %v", res, err)
	}
}
