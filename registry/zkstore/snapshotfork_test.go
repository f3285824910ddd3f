// This file reproduces chaos seed 207's fork (chaos/testdata/zkopen207)
// on a real three-member ensemble: a member the new leader truncates to
// the ensemble's history reloads a snapshot it took beyond that point
// (ZooKeeper 3.8.0 keeps the snapshot when it truncates the log), and
// goes on serving, in the new epoch, the transactions the ensemble does
// not hold. A Store that saw the lost transaction's zxid on the revision
// node must not read a record that transaction wrote as if it were the
// ensemble's: before history.lost it returned it silently, and in seed
// 207 a grant of fence 9 decided on such a record passed the leader's
// version check over a live fence 8. A Store that never saw it cannot
// tell from its reads; the record's marker (identity.go) makes the
// leader refuse its commit.
package zkstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/zktest"
)

func TestMemberServingALostSnapshotIsReported(t *testing.T) {
	t.Parallel()
	res, err := commitOnALostSnapshot(t, false)
	if !errors.Is(err, registry.ErrStoreWentBack) || res.OK {
		t.Fatalf("a commit decided on the lost fence 7 by a Store that never saw the loss: %+v, %v; want registry.ErrStoreWentBack, the leader refusing the record's identity", res, err)
	}
	t.Logf("refused: %v", err)
}

// TestMemberServingALostSnapshotWithoutIdentity is the negative control
// of the records' identity (identity.go): with it left out, as before it,
// the same commit passes the leader's version check over fence 20.
func TestMemberServingALostSnapshotWithoutIdentity(t *testing.T) {
	t.Parallel()
	res, err := commitOnALostSnapshot(t, true)
	if err != nil || !res.OK {
		t.Fatalf("without the records' identity, a commit decided on the lost fence 7: %+v, %v; want it taken by the leader (the version matches), or this test shows nothing", res, err)
	}
	t.Logf("without the records' identity the leader took fence 8 decided on the lost fence 7 over fence 20 (revision %#x)", res.Revision)
}

// withoutIdentity leaves the records' markers out (identity.go).
func withoutIdentity(s *Store) { s.identityOff = true }

// commitOnALostSnapshot forks a real ensemble as chaos seed 207 did and
// returns the commit a Store that never saw the loss makes on the
// record the kept member serves from the lost history; identityOff
// leaves the records' markers out of every Store.
func commitOnALostSnapshot(t *testing.T, identityOff bool) (registry.CommitResult, error) {
	server(t) // skips like the others without ZooKeeper
	ens := zktest.StartEnsemble(t, zktest.EnsembleOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var opts []Option
	if identityOff {
		opts = append(opts, withoutIdentity)
	}
	open := func(servers ...string) *Store { return openStore(t, ctx, servers, opts...) }
	s := open(ens.Servers()...)
	commitFence(t, ctx, s, 1) // fork/x at fence 1: the history the ensemble keeps
	for _, m := range ens.Members {
		memberHolds(t, ctx, m.Addr, 1)
	}
	backup := t.TempDir()
	allStopped(t, ctx, ens, func() { copyTree(t, ens.Members[0].DataDir(), backup) })

	// The transaction the ensemble will lose: fork/y's record, the last
	// commit, so the revision node carries its zxid.
	commitFenceOn(t, ctx, s, "fork/y", 7)
	for _, m := range ens.Members {
		memberHoldsOn(t, ctx, m.Addr, "fork/y", 7)
	}
	// Started again, the member elected leader snapshots its state, fork/y
	// in it (seed 207: zk3's snapshot.200000004 as it took the lead).
	allStopped(t, ctx, ens, func() {})
	id, err := ens.Leader()
	if err != nil {
		t.Fatal(err)
	}
	kept := ens.Member(id)
	// A replica's Store on that member sees the revision node at the lost
	// zxid (serve2 in seed 207), and never reads fork/y.
	onKept := open(kept.Addr)
	if _, err := onKept.Read(ctx, "fork/x", nil); err != nil {
		t.Fatal(err)
	}

	// The others get the copy from before fork/y with epochs above the
	// kept member's: they elect a leader without fork/y, which truncates
	// the kept member's log to the copy's end; the member reloads its
	// snapshot, fork/y in it, and follows.
	allStopped(t, ctx, ens, func() {
		epoch := readEpoch(t, kept.DataDir()) + 5
		for _, m := range ens.Members {
			if m == kept {
				continue
			}
			if err := os.RemoveAll(m.DataDir()); err != nil {
				t.Fatal(err)
			}
			copyTree(t, backup, m.DataDir())
			if err := m.WriteMyID(); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"acceptedEpoch", "currentEpoch"} {
				if err := os.WriteFile(filepath.Join(m.DataDir(), "version-2", f), []byte(strconv.FormatUint(epoch, 10)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	var other *zktest.Member
	for _, m := range ens.Members {
		if m != kept {
			other = m
		}
	}
	onOther := open(other.Addr)
	// The fork, on ZooKeeper alone: the kept member serves fork/y, which
	// the ensemble's history (on the other members) does not hold.
	if snap := readRetrying(t, ctx, onOther, "fork/y"); snap.Record != nil {
		t.Fatalf("member %d holds fork/y at fence %d: the ensemble kept the transaction, nothing was forked", other.ID, snap.Record.HighestFence)
	}
	if snap := readRetrying(t, ctx, open(kept.Addr), "fork/y"); snap.Record == nil || snap.Record.HighestFence != 7 {
		t.Fatalf("member %d after its truncation: fork/y %+v; want the lost fence 7 (ZooKeeper reloading its snapshot beyond the truncation, as in seed 207)", kept.ID, snap.Record)
	}
	// A commit of the ensemble's history sets the revision node again.
	commitFence(t, ctx, onOther, 2)

	// The Store that saw the lost zxid: the revision node went back
	// (same version, another zxid), then fork/y, a record it never read,
	// written by that lost transaction.
	_, err = readUntilAnswer(ctx, onKept, "fork/x")
	if !errors.Is(err, registry.ErrStoreWentBack) {
		t.Fatalf("the revision node after the fork: %v; want registry.ErrStoreWentBack", err)
	}
	snap, err := readUntilAnswer(ctx, onKept, "fork/y")
	if !errors.Is(err, registry.ErrStoreWentBack) {
		t.Fatalf("fork/y on member %d, written by the transaction the ensemble lost: read %+v, %v; want registry.ErrStoreWentBack", kept.ID, snap.Record, err)
	}
	t.Logf("reported: %v", err)

	// What a Store that never saw the lost zxid cannot tell from its
	// reads: the ensemble's history now creates fork/y itself (fence 20,
	// version 0); the kept member cannot apply the create over the node
	// it kept, so it goes on serving the lost fence 7 at that same
	// version 0. A Store started since decides on it, and the leader
	// checks the version, which matches: seed 207's fence 9 over a live
	// fence 8. The record's marker (identity.go) is what the leader
	// refuses: fence 7's is not in the ensemble's history.
	commitFenceOn(t, ctx, onOther, "fork/y", 20)
	fresh := open(kept.Addr)
	lost := readRetrying(t, ctx, fresh, "fork/y")
	if lost.Record == nil || lost.Record.HighestFence != 7 {
		t.Fatalf("member %d after the ensemble created fork/y: %+v; want the lost fence 7 still", kept.ID, lost.Record)
	}
	w := registry.Write{Resource: "fork/y", RecordRev: lost.RecordRev, RecordWas: lost.Record, RecordWasRaw: lost.RecordRaw, Record: &lockstate.Record{HighestFence: 8}}
	res, err := fresh.Commit(ctx, w)
	if err == nil && res.OK {
		if snap := readRetrying(t, ctx, onOther, "fork/y"); snap.Record == nil || snap.Record.HighestFence != 8 {
			t.Fatalf("the commit was answered OK but the ensemble holds fork/y at %+v", snap.Record)
		}
	}
	return res, err
}

// readRetrying reads resource until the store answers (a member still
// rejoining refuses for a moment).
func readRetrying(t *testing.T, ctx context.Context, s *Store, resource string) registry.Snapshot {
	t.Helper()
	snap, err := readUntilAnswer(ctx, s, resource)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// readUntilAnswer reads resource until the read succeeds or reports the
// store went back.
func readUntilAnswer(ctx context.Context, s *Store, resource string) (registry.Snapshot, error) {
	for {
		snap, err := s.Read(ctx, resource, nil)
		if err == nil || errors.Is(err, registry.ErrStoreWentBack) || ctx.Err() != nil {
			return snap, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
