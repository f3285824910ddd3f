// The faults that act on the registry's store: a member of its
// coordination service (etcd or ZooKeeper) killed or frozen, its leader
// taken away, and, where the backend can (Restorer), a snapshot taken
// early and restored late, which makes the registry hand out fences the
// resources have already seen.

package chaos

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
)

// memberFault kills a member (the leader one time in three), freezes one
// (the same), or takes the leader away from its peers (LoseLeader), one
// store-level fault at a time; a required one (must) waits for its turn,
// without holding the store-fault lock while it waits.
func (f *faulter) memberFault(ctx context.Context, kind string, must bool) {
	var target, leader string
	if !f.turn(must, func() (ok bool) { target, leader, ok = f.lockMemberTarget(ctx, kind); return ok }) {
		return
	}
	defer f.storeBusy.Unlock()
	c := f.e.coord
	call := record.Now()
	switch kind {
	case FaultLeaderLoss:
		c.LoseLeader(target, true)
		time.Sleep(f.ms(3000, 5000))
		c.LoseLeader(target, false)
	case FaultZooKeeperStop:
		if err := c.FreezeMember(target); err != nil {
			if must {
				f.e.cfg.Logf("freeze %s: %v; the required fault is drawn again", target, err)
				f.requeue(kind)
			}
			return
		}
		time.Sleep(f.ms(1000, 5000))
		c.ThawMember(target)
	default:
		c.KillMember(target)
		time.Sleep(f.ms(2000, 4000))
		if err := c.RestartMember(target); err != nil {
			f.e.cfg.Logf("restart %s: %v", target, err)
		}
	}
	f.note(kind, call, "%s (leader was %s)", target, leader)
	time.Sleep(time.Second) // let the member catch up before the next store fault
}

// lockMemberTarget takes the store-fault lock and draws the target: a
// random member, or the leader (always for a leader loss, one time in
// three otherwise). It returns false, without the lock, when another
// store fault holds it or the leader is wanted and none is settled.
func (f *faulter) lockMemberTarget(ctx context.Context, kind string) (target, leader string, ok bool) {
	if !f.storeBusy.TryLock() {
		return "", "", false
	}
	c := f.e.coord
	names := c.Names()
	target = names[f.intn(len(names))]
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	leader, err := c.Leader(lctx)
	cancel()
	if kind == FaultLeaderLoss || f.intn(3) == 0 {
		if err != nil || leader == "" {
			f.storeBusy.Unlock()
			return "", "", false // no settled leader to lose right now
		}
		target = leader
	}
	return target, leader, true
}

// snapshotAgeMin is the least time between a snapshot and its restore,
// so that the registry has grants to forget: a snapshot saved late
// (after its retries, or waiting for another store fault) would
// otherwise be restored at once, and the restore end in no pause. Runs
// of 30 s or more meet it anyway.
const snapshotAgeMin = 6 * time.Second

// snapshotTries is the least number of snapshot attempts, a second apart.
const snapshotTries = 10

// snapshotLastPct is how far into the fault window (in percent) the
// snapshot is still tried: late enough to outlast the longest leaderless
// ensemble seen (seed 605's had no leader with a quorum for 19 s after a
// leader loss, past its planned restore, in a 54 s window), early enough that
// the restore, snapshotAgeMin later, leaves the workers time to write
// the fences it hands out again before the faults end.
const snapshotLastPct = 70

// snapshotDeadline is the last instant a snapshot is tried in a fault
// window from start to until.
func snapshotDeadline(start, until time.Time) time.Time {
	return start.Add(until.Sub(start) * snapshotLastPct / 100)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// snapshotAndRestore saves a snapshot early in the run (trying until
// lastTry) and restores the whole cluster from it later: the registry
// forgets every grant issued since, and will hand out fences the
// resources have already seen.
func (f *faulter) snapshotAndRestore(ctx context.Context, rs Restorer, snapAt, restoreAt, lastTry time.Time) {
	snap := filepath.Join(f.e.cfg.StoreDir, "chaos.snapshot")
	if !sleepUntil(ctx, snapAt) {
		return
	}
	saved, snapNs := false, int64(0)
	// Until lastTry, past the planned restore (then the restore waits
	// snapshotAgeMin past the snapshot), at least snapshotTries times: a
	// ZooKeeper ensemble on a loaded machine was seen without a leader
	// for 17 s after its leader was stopped and killed in a row (seeds
	// 124 and 133), and for 19 s after a leader loss (seed 605: a leader
	// elected every 6 s that no follower would sync with), and a
	// snapshot needs one.
	for try := 0; !saved && ctx.Err() == nil && (try < snapshotTries || time.Now().Before(lastTry)); try++ {
		f.storeBusy.Lock()
		call := record.Now()
		err := rs.Snapshot(ctx, snap)
		f.storeBusy.Unlock()
		if err == nil {
			saved, snapNs = true, call
			f.note(FaultSnapshot, call, "to %s", snap)
			break
		}
		f.e.cfg.Logf("snapshot: %v", err)
		time.Sleep(time.Second)
	}
	if saved {
		restoreAt = later(restoreAt, time.Now().Add(snapshotAgeMin))
	}
	if !saved || !sleepUntil(ctx, restoreAt) {
		return
	}
	f.storeBusy.Lock()
	call := record.Now()
	err := rs.Restore(ctx, snap)
	f.storeBusy.Unlock() // the store is whole again; restarting replicas is no store fault
	ev := record.Event{Kind: record.KindRestore, Proc: "orchestrator", CallNs: call, RetNs: record.Now(), Result: record.ResultOK, SnapshotNs: snapNs}
	if err != nil {
		ev.Result, ev.Detail = "error", err.Error()
		f.e.cfg.Logf("restore: %v", err)
	}
	f.rec.Emit(ev)
	f.note(FaultRestore, call, "from %s: %v", snap, err)
	f.rep.restored(ctx)
	if f.e.cfg.RestartReplicasOnRestore || rs.ReplicasNeedRestart() {
		f.restartReplicas()
	}
}

// restartReplicas restarts every serve replica, one after the other: the
// operator's workaround while a replica's record cache could outlive a
// restore.
func (f *faulter) restartReplicas() {
	for _, p := range f.e.serves {
		p.hold()
		p.proc.Stop(serviceStopGrace)
		if err := p.proc.Start(); err != nil {
			f.e.cfg.Logf("restart %s after the restore: %v", p.name, err)
		}
		p.release()
	}
}
