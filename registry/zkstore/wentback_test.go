// This file proves that a Store which saw a later state tells when its
// ZooKeeper ensemble goes back to an earlier one while zxids keep rising,
// the way ZooKeeper 3.8.0 loses acknowledged transactions (a member that
// took a new epoch without logging the leader's history wins the next
// election on that epoch and truncates the others: chaos seed 80,
// docs/guarantees.md "On ZooKeeper"). The fork is made on purpose, on a
// real three-member ensemble: every member is given an early copy of a
// member's data directory with its epochs raised, so the ensemble elects
// a leader of a later epoch holding the older history, as that member
// did. The store's next read must fail with registry.ErrStoreWentBack
// instead of returning the older record (it returned it silently before
// history.go), and the read after it serves the history the ensemble
// holds.
package zkstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/zktest"
)

func TestEnsembleThatWentBackIsReported(t *testing.T) {
	t.Parallel()
	server(t) // skips like the others without ZooKeeper
	ens := zktest.StartEnsemble(t, zktest.EnsembleOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var told []error // the operator's log (WithWentBack)
	s := openStore(t, ctx, ens.Servers(), WithWentBack(func(err error) { told = append(told, err) }))
	commitFence(t, ctx, s, 1)
	// The copy below is of member 1's data: it must hold fence 1 (a quorum
	// acknowledged it without that member once, under -race, and the
	// ensemble then held no record at all).
	memberHolds(t, ctx, ens.Members[0].Addr, 1)
	backup := t.TempDir()
	allStopped(t, ctx, ens, func() { copyTree(t, ens.Members[0].DataDir(), backup) })
	commitFence(t, ctx, s, 2)
	commitFence(t, ctx, s, 3) // acknowledged: the history the ensemble will lose
	allStopped(t, ctx, ens, func() {
		epoch := readEpoch(t, ens.Members[0].DataDir()) + 5 // above every epoch the ensemble used
		for _, m := range ens.Members {
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
	var (
		snap registry.Snapshot
		err  error
	)
	for {
		if snap, err = s.Read(ctx, "fork/x", nil); err == nil || errors.Is(err, registry.ErrStoreWentBack) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // reconnecting to the new leader
	}
	if !errors.Is(err, registry.ErrStoreWentBack) {
		t.Fatalf("after the ensemble went back from fence 3 to fence 1: read %+v, %v; want registry.ErrStoreWentBack", snap.Record, err)
	}
	t.Logf("reported: %v", err)
	if len(told) != 1 || !errors.Is(told[0], registry.ErrStoreWentBack) {
		t.Errorf("WithWentBack was told %v, want the one report", told)
	}
	if snap, err = s.Read(ctx, "fork/x", nil); err != nil || snap.Record == nil || snap.Record.HighestFence != 1 {
		t.Fatalf("the read after the report: fence %+v, %v; want the history the ensemble holds (fence 1)", snap.Record, err)
	}
	commitFence(t, ctx, s, 2) // and commits go on in it
}

// memberHolds waits until the member at addr has applied fork/x's
// record at fence (a read on a session of its own, synced there).
func memberHolds(t *testing.T, ctx context.Context, addr string, fence uint64) {
	t.Helper()
	memberHoldsOn(t, ctx, addr, "fork/x", fence)
}

// openStore dials servers and returns a Store at DefaultRoot over the
// connection, which is closed when the test ends.
func openStore(t *testing.T, ctx context.Context, servers []string, opts ...Option) *Store {
	t.Helper()
	conn, err := Dial(ctx, ClientConfig{Servers: servers, DialTimeout: 20 * time.Second}, DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	s, err := New(ctx, conn, DefaultRoot, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// memberHoldsOn is memberHolds for resource's record.
func memberHoldsOn(t *testing.T, ctx context.Context, addr, resource string, fence uint64) {
	t.Helper()
	conn, err := Dial(ctx, ClientConfig{Servers: []string{addr}, DialTimeout: 20 * time.Second}, DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m, err := New(ctx, conn, DefaultRoot, nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		snap, err := m.Read(ctx, resource, nil)
		if err == nil && snap.Record != nil && snap.Record.HighestFence >= fence {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("member %s never held fence %d: %+v, %v", addr, fence, snap.Record, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// commitFence commits fork/x's record at fence over fence-1.
func commitFence(t *testing.T, ctx context.Context, s *Store, fence uint64) {
	t.Helper()
	commitFenceOn(t, ctx, s, "fork/x", fence)
}

// commitFenceOn commits resource's record at fence over what it holds.
func commitFenceOn(t *testing.T, ctx context.Context, s *Store, resource string, fence uint64) {
	t.Helper()
	for {
		snap, err := s.Read(ctx, resource, nil)
		if err == nil {
			w := registry.Write{Resource: resource, RecordRev: snap.RecordRev, Record: &lockstate.Record{HighestFence: fence}}
			if snap.Record != nil {
				w.RecordWas, w.RecordWasRaw = snap.Record, snap.RecordRaw
			}
			var res registry.CommitResult
			if res, err = s.Commit(ctx, w); err == nil && res.OK {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("commit fence %d: %v", fence, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// allStopped kills every member, runs f, starts them again and waits
// until they serve.
func allStopped(t *testing.T, ctx context.Context, ens *zktest.Ensemble, f func()) {
	t.Helper()
	for _, m := range ens.Members {
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	f()
	for _, m := range ens.Members {
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ens.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
}

// readEpoch reads a member's current epoch.
func readEpoch(t *testing.T, dataDir string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "version-2", "currentEpoch"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
