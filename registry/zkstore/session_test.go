// This file proves what the store does when its connection is cut (a
// partition between it and a live server, long enough for the session to
// expire): a commit sent into the partition returns an error, never a
// failed compare or a success; an open watch ends once the client learns
// its session is gone; and after the partition heals the store, in its
// new session, reads what another replica committed meanwhile and commits
// again.
package zkstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/zktest"
)

func TestPartitionThenSessionExpiry(t *testing.T) {
	srv := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proxy := zktest.NewProxy(t, srv.Addr)
	conn, err := Dial(ctx, ClientConfig{Servers: []string{proxy.Addr}, SessionTimeout: time.Second}, "/")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := fmt.Sprintf("/partition-%d", rootSeq.Add(1))
	cut, err := New(ctx, conn, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(ctx, testConn, root, nil) // another replica, not cut off
	if err != nil {
		t.Fatal(err)
	}
	first, err := cut.Commit(ctx, registry.Write{Resource: "p/1", Record: &lockstate.Record{HighestFence: 1}})
	if err != nil || !first.OK {
		t.Fatalf("first commit: %+v %v", first, err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	events, err := cut.Watch(wctx, "p/1", first.Revision+1)
	if err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	res, err := cut.Commit(cctx, registry.Write{Resource: "p/1", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 2}})
	ccancel()
	if err == nil {
		t.Fatalf("a commit into a partition answered %+v: it can know neither success nor a failed compare", res)
	}
	t.Logf("commit into the partition: %v", err)
	// A multi the client could not get answered is outcome unknown.
	mctx, mcancel := context.WithTimeout(ctx, 2*time.Second)
	_, refused, err := cut.multi(mctx, []any{&zk.SetDataRequest{Path: cut.revPath(), Version: -1}})
	mcancel()
	if refused != nil || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("multi into the partition: refused %v, %v; want ErrOutcomeUnknown", refused, err)
	}
	won, err := other.Commit(ctx, registry.Write{Resource: "p/1", RecordRev: first.Revision, Record: &lockstate.Record{HighestFence: 3}})
	if err != nil || !won.OK {
		t.Fatalf("the other replica's commit: %+v %v", won, err)
	}
	time.Sleep(3 * time.Second) // the server expires the cut-off session (1s)
	proxy.Heal()

	waitClosed(t, events, 3)
	snap := readEventually(t, ctx, cut, "p/1")
	if snap.Record.HighestFence != 3 || snap.RecordRev != won.Revision {
		t.Fatalf("after the partition: fence %d at %d, want the other replica's 3 at %d", snap.Record.HighestFence, snap.RecordRev, won.Revision)
	}
	again, err := cut.Commit(ctx, registry.Write{Resource: "p/1", RecordRev: snap.RecordRev, RecordWas: snap.Record, Record: &lockstate.Record{HighestFence: 4}})
	if err != nil || !again.OK {
		t.Fatalf("commit in the new session: %+v %v", again, err)
	}
}

// TestRefusedPinIsNotUnknown: a multi whose pin ZooKeeper refuses applied
// nothing, and says so (the commit then decides again), unlike a lost one.
func TestRefusedPinIsNotUnknown(t *testing.T) {
	s := freshStore(t)
	ctx := context.Background()
	rev, refused, err := s.multi(ctx, []any{&zk.CheckVersionRequest{Path: s.settingsPath(), Version: 7}, &zk.SetDataRequest{Path: s.revPath(), Version: -1}})
	if err != nil || refused == nil || rev.ok {
		t.Fatalf("stale pin: rev %+v refused %v err %v", rev, refused, err)
	}
	rev, refused, err = s.multi(ctx, []any{&zk.CheckVersionRequest{Path: s.settingsPath(), Version: 0}, &zk.SetDataRequest{Path: s.revPath(), Version: -1}})
	if err != nil || refused != nil || rev.stat.Mzxid == 0 {
		t.Fatalf("right pin: rev %+v refused %v err %v", rev, refused, err)
	}
}

// waitClosed waits for the watch to end, allowing events with fence only.
func waitClosed(t *testing.T, events <-chan registry.RecordEvent, fence uint64) {
	t.Helper()
	closed := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Record.HighestFence != fence {
				t.Fatalf("watch reported fence %d", ev.Record.HighestFence)
			}
		case <-closed:
			t.Fatal("the watch did not end with its session")
		}
	}
}

// readEventually reads resource, retrying while the client reconnects.
func readEventually(t *testing.T, ctx context.Context, s *Store, resource string) registry.Snapshot {
	t.Helper()
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		snap, err := s.Read(rctx, resource, nil)
		cancel()
		if err == nil {
			return snap
		}
		if ctx.Err() != nil {
			t.Fatalf("no read after the partition healed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
