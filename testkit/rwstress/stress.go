// Package rwstress drives a read/write lock from many goroutines —
// readers, and writers that sometimes downgrade — against registries
// sharing one store, and checks what issue 46 promises of it from the
// store's committed records (a watch of the lock's record, every version
// it delivers) and from the workers' own account: never a writer beside
// a reader (no committed record holds both), never a reader admitted past
// a writer queued ahead of it, a downgrade keeps its fence and lets no
// writer in between, no reader but the downgrader admitted before a
// downgrade's ReadersFromMs, fences rising per writer, and every wait
// served. It runs on any Store (the registry's tests use the memory
// store, etcdstore's a real etcd). Its negative control, TwoStepDowngrade,
// downgrades as a release then a read acquire (as Curator's
// InterProcessReadWriteLock did, curator#796): a queued writer gets in
// between.
package rwstress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Resource is the read/write lock the workers share.
const Resource = "rw/table"

// downSuffix ends the request ID of a downgrade's reader grant.
const downSuffix = ".down"

// Options sets a run's shape.
type Options struct {
	Workers  int           // goroutines, spread over the registries; every third is a writer
	Duration time.Duration // how long workers start new acquires
	WaitMs   uint64        // each acquire's wait
	HoldMax  time.Duration // a holder holds up to this long
	// TwoStepDowngrade: the negative control (release, then read).
	TwoStepDowngrade bool
}

// Result is what a run saw.
type Result struct {
	Reads, Writes, Downgrades int64
	Shared                    int64 // reads granted while another reader held, by the workers' account
	Unserved                  int64 // waits that ran out
	Versions                  int64 // committed record versions checked
	Violations                []string
}

type run struct {
	opt        Options
	store      registry.Store
	mu         sync.Mutex
	writer     string          // by the workers' account
	readers    map[string]bool // by the workers' account
	lastFence  uint64          // the last writer's fence, by commit order of the workers' account
	violations []string
	res        Result
}

func (r *run) violate(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.violations) < 20 {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	}
}

// Run drives the workers on regs (replicas over store) and returns what it
// saw; it fails t only for errors of the harness itself.
func Run(t testing.TB, store registry.Store, regs []*registry.Registry, opt Options) Result {
	t.Helper()
	r := &run{opt: opt, store: store, readers: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), opt.Duration+time.Duration(opt.WaitMs)*time.Millisecond+30*time.Second)
	defer cancel()
	wctx, stopWatch := context.WithCancel(ctx)
	events, err := store.Watch(wctx, Resource, 1)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	watched := make(chan struct{})
	go func() { defer close(watched); r.watch(events) }()
	deadline := time.Now().Add(opt.Duration)
	var wg sync.WaitGroup
	for w := range opt.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 46))
			reg := regs[w%len(regs)]
			for n := 0; time.Now().Before(deadline); n++ {
				if err := r.cycle(ctx, reg, w, n, rng); err != nil {
					r.violate("worker %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond) // let the watch deliver the last versions
	stopWatch()
	<-watched
	r.res.Violations = r.violations
	return r.res
}

// retry calls f again, with the same request, while it answers CONFLICT.
func (r *run) retry(f func() error) error {
	for range 50 {
		if err := f(); !errors.Is(err, wire.ErrConflict) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return errors.New("50 conflicts in a row")
}

// cycle is one worker's acquire, hold (a writer may downgrade) and release.
func (r *run) cycle(ctx context.Context, reg *registry.Registry, w, n int, rng *rand.Rand) error {
	owner, id := fmt.Sprint("w", w), fmt.Sprintf("w%d-%d", w, n)
	writer := w%3 == 0
	req := wire.AcquireRequest{Resource: Resource, OperationID: "op", OperationClass: "settle", RequestID: id, TTLMs: 30_000, WaitMs: r.opt.WaitMs}
	if !writer {
		req.Mode = wire.ModeRead
	}
	var is wire.Issued
	err := r.retry(func() (err error) { is, err = reg.Acquire(ctx, owner, req); return err })
	if errors.Is(err, wire.ErrWaitTimeout) {
		atomic.AddInt64(&r.res.Unserved, 1)
		return nil
	}
	if err != nil {
		return fmt.Errorf("acquire (writer %t): %w", writer, err)
	}
	if writer {
		r.takeWrite(owner, is)
	} else {
		r.takeRead(owner, is)
	}
	hold := func() { time.Sleep(time.Duration(rng.Int64N(int64(r.opt.HoldMax) + 1))) }
	hold()
	g := is.Grant
	if writer && rng.IntN(4) == 0 {
		if g, err = r.downgrade(ctx, reg, owner, id, g); err != nil || g == nil {
			return err
		}
		hold()
	}
	r.drop(owner)
	return r.retry(func() error { return reg.Release(ctx, owner, g.Resource, g.Lease) })
}

// downgrade turns the write grant g into a reader's and checks the fence
// is kept and no writer got in between; nil when the negative control's
// read acquire ran out of wait.
func (r *run) downgrade(ctx context.Context, reg *registry.Registry, owner, id string, g *grant.Grant) (*grant.Grant, error) {
	atomic.AddInt64(&r.res.Downgrades, 1)
	var is wire.Issued
	var err error
	if r.opt.TwoStepDowngrade {
		r.drop(owner)
		if err = r.retry(func() error { return reg.Release(ctx, owner, g.Resource, g.Lease) }); err != nil {
			return nil, err
		}
		err = r.retry(func() (err error) {
			is, err = reg.Acquire(ctx, owner, wire.AcquireRequest{Resource: Resource, Mode: wire.ModeRead, OperationID: "op", OperationClass: "settle",
				RequestID: id + downSuffix, TTLMs: 30_000, WaitMs: r.opt.WaitMs})
			return err
		})
		if errors.Is(err, wire.ErrWaitTimeout) {
			atomic.AddInt64(&r.res.Unserved, 1)
			return nil, nil
		}
	} else {
		err = r.retry(func() (err error) {
			is, err = reg.Downgrade(ctx, owner, wire.DowngradeRequest{Resource: Resource, Lease: g.Lease, RequestID: id + downSuffix})
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("downgrade: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if is.Grant.FenceToken != g.FenceToken || r.lastFence != g.FenceToken {
		r.violations = append(r.violations, fmt.Sprintf("downgrade of fence %d: a writer got in between (reader fence %d, last writer's %d)", g.FenceToken, is.Grant.FenceToken, r.lastFence))
	}
	r.writer = ""
	r.readers[owner] = true
	return is.Grant, nil
}

func (r *run) takeWrite(owner string, is wire.Issued) {
	r.mu.Lock()
	defer r.mu.Unlock()
	atomic.AddInt64(&r.res.Writes, 1)
	if r.writer != "" || len(r.readers) > 0 {
		r.violations = append(r.violations, fmt.Sprintf("writer %s granted while writer %q and %d readers hold", owner, r.writer, len(r.readers)))
	}
	if is.Grant.FenceToken <= r.lastFence {
		r.violations = append(r.violations, fmt.Sprintf("writer %s's fence %d not above %d", owner, is.Grant.FenceToken, r.lastFence))
	}
	r.writer, r.lastFence = owner, is.Grant.FenceToken
}

func (r *run) takeRead(owner string, is wire.Issued) {
	r.mu.Lock()
	defer r.mu.Unlock()
	atomic.AddInt64(&r.res.Reads, 1)
	if r.writer != "" {
		r.violations = append(r.violations, fmt.Sprintf("reader %s granted while writer %s holds", owner, r.writer))
	}
	if is.Grant.Resource != wire.ReadResource(Resource) || is.Grant.FenceToken < r.lastFence {
		r.violations = append(r.violations, fmt.Sprintf("reader %s's grant on %s carries fence %d, last writer's %d", owner, is.Grant.Resource, is.Grant.FenceToken, r.lastFence))
	}
	if len(r.readers) > 0 {
		atomic.AddInt64(&r.res.Shared, 1)
	}
	r.readers[owner] = true
}

// drop notes, before its release, that owner no longer holds.
func (r *run) drop(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.writer == owner {
		r.writer = ""
	}
	delete(r.readers, owner)
}

// watch checks every committed version of the lock's record it is
// delivered against the one before.
func (r *run) watch(events <-chan registry.RecordEvent) {
	var prev *lockstate.Record
	for ev := range events {
		rec := ev.Record
		if rec == nil {
			continue
		}
		atomic.AddInt64(&r.res.Versions, 1)
		if rec.Holder != nil && len(rec.Readers) > 0 {
			r.violate("revision %d: writer %s beside %d readers", ev.ModRev, rec.Holder.Grant.Owner, len(rec.Readers))
		}
		if prev != nil {
			r.checkAdmissions(ev.ModRev, prev, rec)
		}
		prev = rec
	}
}

// checkAdmissions checks each reader rec admitted that prev did not hold:
// no writer's ticket ahead of it in prev's queue that is still queued in
// rec (writer preference), and, but for a downgrade's own reader, not
// before prev's ReadersFromMs.
func (r *run) checkAdmissions(rev uint64, prev, rec *lockstate.Record) {
	had := map[string]bool{}
	for _, h := range prev.Readers {
		had[h.Grant.Lease] = true
	}
	queued := map[string]bool{}
	for _, t := range rec.Waiters {
		queued[t.Owner+"/"+t.RequestID] = true
	}
	for _, h := range rec.Readers {
		if had[h.Grant.Lease] {
			continue
		}
		if strings.HasSuffix(h.Grant.RequestID, downSuffix) && !r.opt.TwoStepDowngrade {
			continue // the downgrader itself: admitted at once
		}
		for _, t := range prev.Waiters {
			if t.Owner == h.Grant.Owner && t.RequestID == h.Grant.RequestID {
				break
			}
			if !t.Read && queued[t.Owner+"/"+t.RequestID] {
				r.violate("revision %d: reader %s admitted past the queued writer %s", rev, h.Grant.Owner, t.Owner)
			}
		}
		if h.Grant.IssuedAtMs < prev.ReadersFromMs {
			r.violate("revision %d: reader %s admitted %d ms before a downgrade's statements expired", rev, h.Grant.Owner, prev.ReadersFromMs-h.Grant.IssuedAtMs)
		}
	}
}

// Registries are n replicas over store on the system clock, whose HELD
// statements live StatusProofTTLMs 40 ms under a skew bound of 10 ms: a
// downgrade then holds other readers back 50 ms, not the default's
// 2.5 s, so a few seconds' run sees many downgrades.
func Registries(t testing.TB, store registry.Store, n int) []*registry.Registry {
	t.Helper()
	k, err := grant.GenerateKey(grant.AlgEd25519, "rwstress", bytes.NewReader(bytes.Repeat([]byte{2}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	var out []*registry.Registry
	for range n {
		cfg := registry.DefaultConfig(1)
		cfg.WaitPollMsMax = 50
		cfg.StatusProofTTLMs, cfg.ClockSkewMaxMs = 40, 10
		reg, err := registry.New(store, cfg, clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, reg)
	}
	return out
}
