package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
)

// etcdFault kills a member (the leader one time in three) or cuts the
// leader from its peers, one etcd-level fault at a time.
func (f *faulter) etcdFault(ctx context.Context, kind string) {
	if !f.etcdBusy.TryLock() {
		return
	}
	defer f.etcdBusy.Unlock()
	c := f.e.etcd
	names := c.Names()
	target := names[f.intn(len(names))]
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	leader, err := c.Leader(lctx)
	cancel()
	if kind == FaultLeaderLoss || f.intn(3) == 0 {
		if err != nil || leader == "" {
			return // no settled leader to lose right now
		}
		target = leader
	}
	call := record.Now()
	if kind == FaultLeaderLoss {
		c.Isolate(target, true)
		time.Sleep(f.ms(3000, 5000))
		c.Isolate(target, false)
	} else {
		c.KillMember(target)
		time.Sleep(f.ms(2000, 4000))
		if err := c.RestartMember(target); err != nil {
			f.e.cfg.Logf("restart %s: %v", target, err)
		}
	}
	f.note(kind, call, "%s (leader was %s)", target, leader)
	time.Sleep(time.Second) // let the member catch up before the next etcd fault
}

// linkFault black-holes, slows or resets one link: a worker's link to a
// replica or a service, a replica's link to an etcd member, or (for a
// partition) the peer link between two etcd members.
func (f *faulter) linkFault(kind string) {
	if kind == FaultPartition && f.intn(4) == 0 {
		f.peerPartition()
		return
	}
	px := f.e.links[f.intn(len(f.e.links))]
	var lf LinkFault
	var d time.Duration
	switch kind {
	case FaultPartition:
		lf, d = LinkFault{Blackhole: true}, f.ms(1000, 4000)
	case FaultDelay:
		lf, d = LinkFault{Delay: f.ms(50, 400)}, f.ms(2000, 5000)
	case FaultDrop:
		lf, d = LinkFault{DropP: 0.3}, f.ms(2000, 4000)
	}
	call := record.Now()
	px.Set("", lf)
	time.Sleep(d)
	px.Set("", LinkFault{})
	f.note(kind, call, "%s %+v for %s", px.Name(), lf, d)
}

func (f *faulter) peerPartition() {
	if !f.etcdBusy.TryLock() {
		return
	}
	defer f.etcdBusy.Unlock()
	names := f.e.etcd.Names()
	i := f.intn(len(names))
	a, b := names[i], names[(i+1+f.intn(len(names)-1))%len(names)]
	d := f.ms(1000, 4000)
	call := record.Now()
	f.e.etcd.Cut(a, b, true)
	time.Sleep(d)
	f.e.etcd.Cut(a, b, false)
	f.note(FaultPartition, call, "peer %s|%s for %s", a, b, d)
}

// clockJump steps one worker's clock forwards or backwards for a while.
func (f *faulter) clockJump() {
	w := f.e.workers[f.intn(len(f.e.workers))]
	off := f.ms(500, 5000)
	if f.intn(2) == 0 {
		off = -off
	}
	d := f.ms(3000, 8000)
	call := record.Now()
	if w.Send(fmt.Sprintf("clock %d", off.Milliseconds())) != nil {
		return
	}
	time.Sleep(d)
	w.Send("clock 0")
	f.note(FaultClockJump, call, "%s by %s for %s", w.Name, off, d)
}

// snapshotAndRestore saves a snapshot early in the run and restores the
// whole cluster from it later: the registry forgets every grant issued
// since, and will hand out fences the resources have already seen.
func (f *faulter) snapshotAndRestore(ctx context.Context, snapAt, restoreAt time.Time) {
	snap := filepath.Join(f.e.cfg.EtcdDir, "chaos.snapshot")
	if !sleepUntil(ctx, snapAt) {
		return
	}
	saved := false
	for try := 0; try < 10 && !saved && ctx.Err() == nil; try++ {
		f.etcdBusy.Lock()
		call := record.Now()
		err := f.e.etcd.Snapshot(ctx, snap)
		f.etcdBusy.Unlock()
		if err == nil {
			saved = true
			f.note(FaultSnapshot, call, "to %s", snap)
			break
		}
		f.e.cfg.Logf("snapshot: %v", err)
		time.Sleep(time.Second)
	}
	if !saved || !sleepUntil(ctx, restoreAt) {
		return
	}
	f.etcdBusy.Lock()
	defer f.etcdBusy.Unlock()
	call := record.Now()
	err := f.e.etcd.Restore(ctx, snap)
	ev := record.Event{Kind: record.KindRestore, Proc: "orchestrator", CallNs: call, RetNs: record.Now(), Result: record.ResultOK}
	if err != nil {
		ev.Result, ev.Detail = "error", err.Error()
		f.e.cfg.Logf("restore: %v", err)
	}
	f.rec.Emit(ev)
	f.note(FaultRestore, call, "from %s: %v", snap, err)
	f.rep.restored(ctx)
	if f.e.cfg.RestartReplicasOnRestore {
		f.restartReplicas()
	}
}

// restartReplicas restarts every serve replica, one after the other: the
// operator's workaround while a replica's record cache could outlive a
// restore.
func (f *faulter) restartReplicas() {
	for _, p := range f.e.serves {
		p.proc.Stop(serviceStopGrace)
		if err := p.proc.Start(); err != nil {
			f.e.cfg.Logf("restart %s after the restore: %v", p.name, err)
		}
	}
}
