package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/fencegate/fencegate/chaos/record"
)

// Stop grace periods: a worker gets workerStopGrace to release its lease
// after SIGTERM, every other process serviceStopGrace.
const (
	workerStopGrace  = 5 * time.Second
	serviceStopGrace = 3 * time.Second
)

// Run starts a whole system (three store members, the serve replicas, the
// resource services on PostgreSQL, the workers and a proxy per link),
// injects the seed's faults for cfg.Duration, stops everything and checks
// the history. It always stops by itself: the faults end settleTime
// before the budget, and every process it started is killed on return.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"logs", "events"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	e := &Env{cfg: cfg}
	defer e.teardown()
	if err := e.start(ctx); err != nil {
		return nil, err
	}
	rec, err := record.Create(e.EventsPath("orchestrator"))
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	rep := newRepairer(e, rec)
	fl := newFaulter(e, rec, rep)
	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration))
	defer cancel()
	repDone := make(chan struct{})
	go func() {
		defer close(repDone)
		if !cfg.Mutant {
			rep.run(runCtx)
		}
	}()
	supDone := make(chan struct{})
	go func() { defer close(supDone); e.supervise(runCtx) }()
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); e.watchHistory(runCtx, rec, rep) }()
	cfg.Logf("seed %d: system up, faults for %s", cfg.Seed, cfg.Duration-settleTime)
	fl.run(runCtx, start, start.Add(cfg.Duration-settleTime))
	e.settle()
	sleepUntil(ctx, start.Add(cfg.Duration))
	elapsed := time.Since(start)
	stopAll(e.workers, workerStopGrace)
	cancel()
	<-repDone
	<-supDone
	<-watchDone
	var svcs []*Proc
	for _, s := range e.services {
		svcs = append(svcs, s.proc)
	}
	stopAll(svcs, serviceStopGrace)
	report, err := Check(ctx, cfg, e.db, filepath.Join(cfg.Dir, "events"))
	if err != nil {
		return nil, err
	}
	report.Duration, report.Faults = elapsed, fl.Counts()
	_, restores := e.coord.(Restorer)
	report.Engine, report.RestoreExpected = e.coord.Engine(), restores && !cfg.Mutant
	report.FaultsMissing, report.Supervised = fl.Missing(), int(e.supervised.Load())
	return report, nil
}

func (e *Env) start(ctx context.Context) error {
	if err := e.setupKeys(ctx); err != nil {
		return err
	}
	c, err := startCoordinator(ctx, &e.procs, e.cfg)
	e.coord = c
	if err != nil {
		return err
	}
	if err := e.startServes(ctx); err != nil {
		return err
	}
	if err := e.startServices(ctx); err != nil {
		return err
	}
	return e.startWorkers()
}

// historyWatcher is a Coordinator that tells when its store went back by
// itself (ZooKeeperEnsemble.WatchHistory).
type historyWatcher interface {
	WatchHistory(ctx context.Context, emit func(record.Event))
}

// watchHistory records every regression the coordinator's watch sees
// until ctx ends, and has the repairer treat it as a restore (the
// operator's procedure after either).
func (e *Env) watchHistory(ctx context.Context, rec *record.Writer, rep *repairer) {
	w, ok := e.coord.(historyWatcher)
	if !ok {
		return
	}
	w.WatchHistory(ctx, func(ev record.Event) {
		rec.Emit(ev)
		e.cfg.Logf("%s (%s)", ev.Detail, e.coord.Engine())
		if !e.cfg.Mutant {
			rep.restored(ctx)
		}
	})
}

// settle ends every fault: links healed, workers thawed and back on the
// real clock, killed processes restarted.
func (e *Env) settle() {
	for _, px := range e.links {
		px.Heal()
	}
	for _, n := range e.coord.Names() {
		e.coord.Isolate(n, false)
		e.coord.ThawMember(n)
		if err := e.coord.RestartMember(n); err != nil {
			e.cfg.Logf("settle: %v", err)
		}
	}
	for _, p := range e.serves {
		if p.proc.Frozen() {
			p.proc.Thaw()
		}
		if _, err := p.startIfDown(); err != nil {
			e.cfg.Logf("settle: %v", err)
		}
	}
	for _, w := range e.workers {
		w.Thaw()
		w.Send("clock 0")
	}
}

// teardown kills every process and closes every proxy and handle.
func (e *Env) teardown() {
	e.procs.KillAll()
	for _, px := range e.links {
		px.Close()
	}
	if e.coord != nil {
		e.coord.Close()
	}
	if e.db != nil {
		e.db.Close()
	}
}

// stopAll stops every process at once, each with its grace.
func stopAll(ps []*Proc, grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(grace) }()
	}
	wg.Wait()
}

// String names a run for logs.
func (c Config) String() string {
	return fmt.Sprintf("seed %d on %s (%s, %d workers, %d semaphores of %d permits, %d read/write locks, mutant=%t)", c.Seed, c.Backend, c.Duration, c.Workers, max(c.Semaphores, 0), c.Permits, max(c.RWLocks, 0), c.Mutant)
}
