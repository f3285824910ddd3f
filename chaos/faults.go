package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/fencegate/fencegate/chaos/record"
)

// Fault kinds, as counted in a run's report.
const (
	FaultWorkerStop = "worker-stop" // SIGSTOP a worker past its TTL, then SIGCONT
	FaultServeKill  = "serve-kill"  // kill -9 a serve replica, restart it
	FaultServeStop  = "serve-stop"  // SIGSTOP a serve replica, then SIGCONT (ZooKeeper runs)
	FaultEtcdKill   = "etcd-kill"   // kill -9 an etcd member, restart it
	FaultLeaderLoss = "leader-loss" // take the leader from its peers (Coordinator.LoseLeader)
	FaultPartition  = "partition"   // black-hole one link (or two members' peer link)
	FaultDelay      = "delay"       // add latency to one link
	FaultDrop       = "drop"        // reset one link's connections at random
	FaultClockJump  = "clock-jump"  // step one worker's clock
	FaultSnapshot   = "snapshot"    // save the store (Restorer.Snapshot: etcdctl snapshot save)
	FaultRestore    = "restore"     // restore the store from it (Restorer.Restore)

	FaultZooKeeperKill = "zookeeper-kill" // kill -9 a ZooKeeper member, restart it
	FaultZooKeeperStop = "zookeeper-stop" // SIGSTOP a ZooKeeper member, then SIGCONT
)

// faultGapMs bounds the pause between two injections.
const faultGapMsMin, faultGapMsMax = 800, 2500

// longest bounds how long one random fault lasts (a frozen worker: TTL +
// 1 s + 3 s; a store fault: 5 s + 1 s; a clock step or a frozen replica:
// 8 s): none starts later than this before the end of the fault window,
// so every one has healed by then.
func (f *faulter) longest() time.Duration {
	return max(time.Duration(f.e.cfg.TTLMs)*time.Millisecond+4*time.Second, 8*time.Second)
}

type weighted struct {
	kind   string
	weight int
}

// faultMix is how often each random kind is drawn on etcd; the mutant
// only freezes workers (the story the fence check exists for). It is as
// it was before the ZooKeeper runs, so an etcd seed draws what it drew.
var faultMix = []weighted{
	{FaultWorkerStop, 3}, {FaultServeKill, 1}, {FaultEtcdKill, 1}, {FaultLeaderLoss, 1},
	{FaultPartition, 3}, {FaultDelay, 2}, {FaultDrop, 2}, {FaultClockJump, 2},
}

// zkFaultMix is faultMix on ZooKeeper: members and serve replicas are
// frozen (SIGSTOP) as well as killed.
var zkFaultMix = []weighted{
	{FaultWorkerStop, 3}, {FaultServeKill, 1}, {FaultServeStop, 1}, {FaultZooKeeperKill, 1}, {FaultZooKeeperStop, 1},
	{FaultLeaderLoss, 1}, {FaultPartition, 3}, {FaultDelay, 2}, {FaultDrop, 2}, {FaultClockJump, 2},
}

// zkRequiredFaults are the kinds a ZooKeeper run must inject at least
// once, however short: kill -9 and SIGSTOP of members (the leader among
// them) and of serve replicas. Until each has been drawn, every draw
// picks one of those left, which then waits for its turn (another
// store fault, a leader to lose, the other replica up) rather than
// being skipped, until the last instant a fault may start.
var zkRequiredFaults = []string{FaultZooKeeperKill, FaultZooKeeperStop, FaultLeaderLoss, FaultServeKill, FaultServeStop}

// mixFor returns the fault mix of a backend and the kinds a run on it
// must inject (none on etcd, whose draws are as they always were).
func mixFor(engine string) ([]weighted, []string) {
	if engine == BackendZooKeeper {
		return zkFaultMix, zkRequiredFaults
	}
	return faultMix, nil
}

// faulter injects a run's faults. Every fault heals itself: each runs in
// its own goroutine that undoes it after its seeded duration.
type faulter struct {
	e   *Env
	rec *record.Writer
	rep *repairer

	mu     sync.Mutex
	rng    *rand.Rand
	counts map[string]int

	mix       []weighted
	required  []string   // kinds to inject at least once (mixFor)
	pending   []string   // required kinds not drawn yet (or requeued); under mu
	lastStart time.Time  // no fault starts after it
	storeBusy sync.Mutex // one store-level fault at a time, so a quorum usually survives
	wg        sync.WaitGroup
}

func newFaulter(e *Env, rec *record.Writer, rep *repairer) *faulter {
	f := &faulter{e: e, rec: rec, rep: rep, rng: rand.New(rand.NewPCG(e.cfg.Seed, 0xfa)), counts: map[string]int{}}
	f.mix, f.required = mixFor(e.coord.Engine())
	if e.cfg.Mutant {
		f.required = nil
	}
	f.pending = append([]string(nil), f.required...)
	return f
}

func (f *faulter) intn(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n)
}

// ms draws a duration in [lo, hi] milliseconds.
func (f *faulter) ms(lo, hi int) time.Duration {
	return time.Duration(lo+f.intn(hi-lo+1)) * time.Millisecond
}

// note counts a fault and records it in the orchestrator's history.
func (f *faulter) note(kind string, call int64, format string, args ...any) {
	f.mu.Lock()
	f.counts[kind]++
	f.mu.Unlock()
	detail := kind + " " + fmt.Sprintf(format, args...)
	f.rec.Emit(record.Event{Kind: record.KindFault, Proc: "orchestrator", CallNs: call, RetNs: record.Now(), Result: record.ResultOK, Detail: detail})
	f.e.cfg.Logf("%s", detail)
}

// Counts returns the faults injected per kind.
func (f *faulter) Counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

// Missing returns the required kinds not injected so far.
func (f *faulter) Missing() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, k := range f.required {
		if f.counts[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

// run injects random faults until `until`, and the snapshot and restore
// at their instants where the store can (Restorer), then waits for every
// fault to heal.
func (f *faulter) run(ctx context.Context, start, until time.Time) {
	if rs, ok := f.e.coord.(Restorer); ok && !f.e.cfg.Mutant {
		d := until.Sub(start)
		snapAt := start.Add(d * 15 / 100)
		restoreAt := start.Add(d*45/100 + f.ms(0, int(d.Milliseconds()/10)))
		f.spawn(func() { f.snapshotAndRestore(ctx, rs, snapAt, restoreAt, snapshotDeadline(start, until)) })
	}
	f.lastStart = until.Add(-f.longest())
	for {
		if !sleepUntil(ctx, time.Now().Add(f.ms(faultGapMsMin, faultGapMsMax))) || time.Now().After(f.lastStart) {
			break
		}
		kind, must := FaultWorkerStop, false
		if !f.e.cfg.Mutant {
			kind, must = f.draw()
		}
		f.spawn(func() { f.inject(ctx, kind, must) })
	}
	f.wg.Wait()
}

func (f *faulter) spawn(fn func()) {
	f.wg.Add(1)
	go func() { defer f.wg.Done(); fn() }()
}

// draw picks the next kind: a required one (zkRequiredFaults) while any
// is left, must true, which waits for its turn instead of being skipped;
// then a random one. Required kinds come first so that their turns, one
// store fault at a time, fit before the last instant a fault may start
// even when the store faults take their longest (a ZooKeeper run under
// load once ran out of time with one still waiting).
func (f *faulter) draw() (kind string, must bool) {
	f.mu.Lock()
	if len(f.pending) > 0 {
		i := f.rng.IntN(len(f.pending))
		kind = f.pending[i]
		f.pending = append(f.pending[:i], f.pending[i+1:]...)
		f.mu.Unlock()
		return kind, true
	}
	f.mu.Unlock()
	return f.drawMix(), false
}

// requeue puts a required kind whose turn came but which could not be
// applied (a member that would not freeze) back to be drawn again.
func (f *faulter) requeue(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, kind)
}

func (f *faulter) drawMix() string {
	total := 0
	for _, w := range f.mix {
		total += w.weight
	}
	n := f.intn(total)
	for _, w := range f.mix {
		if n < w.weight {
			return w.kind
		}
		n -= w.weight
	}
	return f.mix[0].kind
}

// inject runs one fault of kind: on processes (faults_process.go), the
// registry's store (faults_store.go) or links (faults_network.go).
func (f *faulter) inject(ctx context.Context, kind string, must bool) {
	switch kind {
	case FaultWorkerStop:
		f.workerStop(ctx)
	case FaultServeKill:
		f.serveKill(must)
	case FaultServeStop:
		f.serveStop(must)
	case FaultEtcdKill, FaultZooKeeperKill, FaultZooKeeperStop, FaultLeaderLoss:
		f.memberFault(ctx, kind, must)
	case FaultPartition, FaultDelay, FaultDrop:
		f.linkFault(kind)
	case FaultClockJump:
		f.clockJump()
	}
}

// turn calls try until it returns true: once, or, when must, every
// mustRetry until the last instant a fault may start. It reports whether
// try succeeded.
func (f *faulter) turn(must bool, try func() bool) bool {
	for {
		if try() {
			return true
		}
		if !must || time.Now().After(f.lastStart) {
			return false
		}
		time.Sleep(mustRetry)
	}
}

// mustRetry is how often a required fault tries again for its turn.
const mustRetry = 250 * time.Millisecond

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sleepUntil waits for t or ctx; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}
