// Proves that a zkstore.Store reports the acknowledged writes its
// ZooKeeper ensemble loses (FENCEGATE_CHAOS=1): four writers, each with
// its own store and session, raise their own record's fence as the
// registry does (a synced read, a commit over what it read) while the
// leader is frozen and thawed and members are killed, after a snapshot
// and a restore (FENCEGATE_ZK_WRITES_RESTORE=1) as in a chaos run. A read
// below a fence acknowledged to the writer must come after the store
// said registry.ErrStoreWentBack; the test fails on one that did not, and
// logs each loss it saw reported. Debian's ZooKeeper 3.8.0 loses
// acknowledged writes this way within minutes (docs/guarantees.md, "On
// ZooKeeper"), and did in the run of chaos seed 80:
//
//	FENCEGATE_CHAOS=1 FENCEGATE_ZK_WRITES_RESTORE=1 FENCEGATE_ZK_WRITES_DURATION=5m \
//	  FENCEGATE_CHAOS_KEEP=DIR go test -count=1 -timeout 20m -v -run TestZooKeeperReportsLostWrites ./chaos/
package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/zkstore"
)

// ackedWrites is every writer's highest acknowledged counter.
type ackedWrites struct {
	mu       sync.Mutex
	era      int // restores so far: a restore forgets what was acknowledged before it
	acked    map[string]uint64
	lost     []string        // fences read below an acknowledged one, unreported
	reported []string        // ErrStoreWentBack reports but the restore's
	restored map[string]bool // writers yet to see the restore
	watched  []string        // regressions the chaos watch (WatchHistory) saw
}

func TestZooKeeperReportsLostWrites(t *testing.T) {
	zooKeeperAvailable(t)
	d := 90 * time.Second
	if v := os.Getenv("FENCEGATE_ZK_WRITES_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+3*time.Minute)
	defer cancel()
	var procs Procs
	defer procs.KillAll()
	dir := t.TempDir()
	if keep := os.Getenv(EnvKeep); keep != "" {
		dir = keep
	}
	z, err := startZooKeeper(ctx, &procs, dir, 1)
	if z != nil {
		defer z.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	a := &ackedWrites{acked: map[string]uint64{}, restored: map[string]bool{}}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); a.write(wctx, t, z.ClientAddrs(), fmt.Sprintf("writes/%d", i)) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		z.WatchHistory(wctx, func(ev record.Event) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.watched = append(a.watched, ev.Detail)
		})
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	if os.Getenv("FENCEGATE_ZK_WRITES_RESTORE") == "1" {
		snap := filepath.Join(dir, "writes.snapshot")
		time.Sleep(5 * time.Second)
		if err := z.Snapshot(ctx, snap); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s snapshot", time.Now().Format("15:04:05.000"))
		time.Sleep(8 * time.Second)
		a.mu.Lock()
		a.era++
		clear(a.acked)
		for i := range 4 {
			a.restored[fmt.Sprintf("writes/%d", i)] = true
		}
		if err := z.Restore(ctx, snap); err != nil {
			t.Fatal(err)
		}
		a.mu.Unlock()
		t.Logf("%s restored", time.Now().Format("15:04:05.000"))
	}
	deadline := time.Now().Add(d)
	for n := 0; time.Now().Before(deadline); n++ {
		leader, err := z.Leader(ctx)
		if err != nil {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		hold := time.Duration(3000+rng.IntN(2000)) * time.Millisecond
		switch rng.IntN(3) {
		case 0, 1:
			t.Logf("%s leader-loss %s for %s", time.Now().Format("15:04:05.000"), leader, hold)
			z.LoseLeader(leader, true)
			time.Sleep(hold)
			z.LoseLeader(leader, false)
		default:
			t.Logf("%s kill %s for %s", time.Now().Format("15:04:05.000"), leader, hold)
			z.KillMember(leader)
			time.Sleep(hold)
			if err := z.RestartMember(leader); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
		a.mu.Lock()
		lost := len(a.lost)
		a.mu.Unlock()
		if lost > 0 {
			break
		}
	}
	stop()
	wg.Wait()
	for _, r := range a.reported {
		t.Logf("ZooKeeper lost acknowledged writes, reported: %s", r)
	}
	for _, w := range a.watched {
		t.Logf("the chaos watch saw: %s", w)
	}
	if len(a.reported) > 0 && len(a.watched) == 0 {
		t.Errorf("the stores reported %d losses and the chaos watch (WatchHistory) saw none", len(a.reported))
	}
	if len(a.lost) > 0 {
		t.Errorf("ZooKeeper lost acknowledged writes and the store did not say so (member logs in %s):\n%s", dir, strings.Join(a.lost, "\n"))
	}
	t.Logf("%d losses reported; fences acknowledged last: %v", len(a.reported), a.acked)
}

// write increments resource's fence through its own zkstore.Store (its
// own session) until ctx ends: a synced Read, then a Commit of the next
// fence over the record read, as the registry does. A Read that returns
// a fence below one acknowledged to this writer, without
// registry.ErrStoreWentBack first, is an undetected loss; with it, the
// loss is counted and the writer goes on in the history the ensemble
// holds.
func (a *ackedWrites) write(ctx context.Context, t *testing.T, addrs []string, resource string) {
	var s *zkstore.Store
	for ctx.Err() == nil && s == nil {
		conn, err := zkstore.Dial(ctx, zkstore.ClientConfig{Servers: addrs, DialTimeout: 20 * time.Second}, zkstore.DefaultRoot)
		if err == nil {
			defer conn.Close()
			if s, err = zkstore.New(ctx, conn, zkstore.DefaultRoot, nil); err != nil {
				s = nil
			}
		}
	}
	for ctx.Err() == nil {
		snap, err := s.Read(ctx, resource, nil)
		a.mu.Lock()
		era := a.era
		switch {
		case errors.Is(err, registry.ErrStoreWentBack) && a.restored[resource]:
			a.restored[resource], a.acked[resource] = false, 0
		case errors.Is(err, registry.ErrStoreWentBack):
			a.reported = append(a.reported, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), resource, err))
			a.acked[resource] = 0
		case err == nil && snap.Record != nil && snap.Record.HighestFence < a.acked[resource]:
			a.lost = append(a.lost, fmt.Sprintf("%s %s: read fence %d (revision %#x) after %d was acknowledged, and no ErrStoreWentBack",
				time.Now().Format("15:04:05.000"), resource, snap.Record.HighestFence, snap.RecordRev, a.acked[resource]))
		}
		a.mu.Unlock()
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		next := uint64(1)
		w := registry.Write{Resource: resource, RecordRev: snap.RecordRev}
		if snap.Record != nil {
			next = snap.Record.HighestFence + 1
			w.RecordWas, w.RecordWasRaw = snap.Record, snap.RecordRaw
		}
		w.Record = &lockstate.Record{HighestFence: next}
		if res, err := s.Commit(ctx, w); err == nil && res.OK {
			a.mu.Lock()
			if a.era == era {
				a.acked[resource] = max(a.acked[resource], next)
			}
			a.mu.Unlock()
		}
		time.Sleep(10 * time.Millisecond)
	}
}
