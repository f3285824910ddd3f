// This file measures the registry against its natural baseline on the same
// embedded etcd (fsync on, as in production), in the same run: etcd's own
// concurrency.Mutex. Timings are reported, never asserted.
//
//	go test ./registry/etcdstore -run '^$' -bench . -count 5
package etcdstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

var (
	benchOnce   sync.Once
	benchClient *clientv3.Client
	benchErr    error
)

// benchEtcd starts one embedded etcd with fsync on for all benchmarks; it
// lives until the test binary exits (its directory is removed by TestMain's
// caller only if empty, so it goes under the test's temp dir root).
func benchEtcd(b *testing.B) *clientv3.Client {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "etcdstore-bench-")
		if err != nil {
			benchErr = err
			return
		}
		e, err := StartEmbedded(context.Background(), dir, EmbeddedOptions{})
		if err != nil {
			benchErr = err
			return
		}
		benchCleanup = append(benchCleanup, func() { e.Close(); os.RemoveAll(dir) })
		benchClient, benchErr = e.Client()
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchClient
}

var benchCleanup []func()

func benchRegistry(b *testing.B, c *clientv3.Client) *registry.Registry {
	return storetest.NewRegistry(b, New(c, fmt.Sprintf("/bench-%d/", prefixSeq.Add(1))), nil)
}

func benchReq(resource string, i int, waitMs uint64) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: resource, OperationID: "op", OperationClass: "bench", RequestID: fmt.Sprint("r", i), TTLMs: 30_000, WaitMs: waitMs}
}

// BenchmarkAcquireRelease: one uncontended acquire+release cycle.
func BenchmarkAcquireRelease(b *testing.B) {
	c := benchEtcd(b)
	ctx := context.Background()
	b.Run("registry", func(b *testing.B) {
		reg := benchRegistry(b, c)
		i := 0
		for b.Loop() {
			i++
			is, err := reg.Acquire(ctx, "bench", benchReq("cycle/1", i, 0))
			if err != nil {
				b.Fatal(err)
			}
			if err := reg.Release(ctx, "bench", "cycle/1", is.Grant.Lease); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("etcd-mutex", func(b *testing.B) {
		s, err := concurrency.NewSession(c)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		m := concurrency.NewMutex(s, fmt.Sprintf("/bench-mutex-%d/cycle", prefixSeq.Add(1)))
		for b.Loop() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAcquireReleaseInterleaved alternates one registry cycle with
// its release answered after its commit, one with its release answered
// early (Config.ReleaseEarly; its commit is awaited, untimed, before the
// next leg) and one etcd-mutex cycle per iteration, so all see the same
// disk and the same neighbours; it reports each side's median cycle and
// the registry's ratios to the Mutex.
func BenchmarkAcquireReleaseInterleaved(b *testing.B) {
	c := benchEtcd(b)
	ctx := context.Background()
	reg := benchRegistry(b, c)
	early := newEarlyRegistry(b, New(c, fmt.Sprintf("/bench-%d/", prefixSeq.Add(1))))
	s, err := concurrency.NewSession(c)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m := concurrency.NewMutex(s, fmt.Sprintf("/bench-mutex-%d/cycle", prefixSeq.Add(1)))
	var regTimes, earlyTimes, mutexTimes []float64
	i := 0
	cycle := func(reg *registry.Registry) float64 {
		t0 := time.Now()
		is, err := reg.Acquire(ctx, "bench", benchReq("cycle/1", i, 0))
		if err != nil {
			b.Fatal(err)
		}
		if err := reg.Release(ctx, "bench", "cycle/1", is.Grant.Lease); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(t0).Microseconds())
	}
	for b.Loop() {
		i++
		regTimes = append(regTimes, cycle(reg))
		earlyTimes = append(earlyTimes, cycle(early))
		// Untimed: the early release's commit lands before the Mutex's
		// cycle starts, so it neither slows the Mutex's nor overlaps the
		// next cycle's acquire (the figure is one commit a cycle, not a
		// pipeline's).
		if err := flushEarly(ctx, early); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		mutexTimes = append(mutexTimes, float64(time.Since(t1).Microseconds()))
	}
	b.ReportMetric(median(regTimes), "registry-us/cycle")
	b.ReportMetric(median(earlyTimes), "registry-early-us/cycle")
	b.ReportMetric(median(mutexTimes), "mutex-us/cycle")
	b.ReportMetric(median(regTimes)/median(mutexTimes), "ratio")
	b.ReportMetric(median(earlyTimes)/median(mutexTimes), "ratio-early")
}

// locker is one contender's acquire/release, for both systems.
type locker interface {
	lock(ctx context.Context, seq int) error
	unlock(ctx context.Context) error
}

type regLocker struct {
	reg      *registry.Registry
	owner    string
	resource string
	waitMs   uint64
	lease    string
}

func (l *regLocker) lock(ctx context.Context, seq int) error {
	is, err := l.reg.Acquire(ctx, l.owner, benchReq(l.resource, seq, l.waitMs))
	if err == nil {
		l.lease = is.Grant.Lease
	}
	return err
}

func (l *regLocker) unlock(ctx context.Context) error {
	return l.reg.Release(ctx, l.owner, l.resource, l.lease)
}

type mutexLocker struct{ m *concurrency.Mutex }

func (l *mutexLocker) lock(ctx context.Context, _ int) error { return l.m.Lock(ctx) }
func (l *mutexLocker) unlock(ctx context.Context) error      { return l.m.Unlock(ctx) }

// handoffWaiters is how many contenders queue behind the holder.
const handoffWaiters = 8

// BenchmarkHandoff: 1 holder and 8 waiters on one resource, each releasing
// as soon as it holds. One op is one handoff; the metrics are the time from
// a release being acknowledged to its successor holding.
func BenchmarkHandoff(b *testing.B) {
	c := benchEtcd(b)
	b.Run("registry", func(b *testing.B) {
		regs := []*registry.Registry{benchRegistry(b, c)}
		var ls []locker
		for i := 0; i <= handoffWaiters; i++ {
			ls = append(ls, &regLocker{reg: regs[0], owner: fmt.Sprint("w", i), resource: "handoff/1", waitMs: 30_000})
		}
		runHandoff(b, ls)
	})
	b.Run("etcd-mutex", func(b *testing.B) {
		key := fmt.Sprintf("/bench-mutex-%d/handoff", prefixSeq.Add(1))
		var ls []locker
		for i := 0; i <= handoffWaiters; i++ {
			s, err := concurrency.NewSession(c)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ls = append(ls, &mutexLocker{m: concurrency.NewMutex(s, key)})
		}
		runHandoff(b, ls)
	})
}

func runHandoff(b *testing.B, ls []locker) {
	ctx := context.Background()
	n := b.N + 1
	held, released := make([]time.Time, n), make([]time.Time, n)
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
		errs = make(chan error, len(ls))
	)
	b.ResetTimer()
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if err := l.lock(ctx, i); err != nil {
					errs <- err
					return
				}
				at := time.Now()
				mu.Lock()
				k := next
				next++
				mu.Unlock()
				if k < n {
					held[k] = at
				}
				err := l.unlock(ctx)
				if k < n {
					released[k] = time.Now()
				}
				if err != nil {
					errs <- err
					return
				}
				if k >= n-1 {
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	lat := make([]float64, 0, n-1)
	for k := 1; k < n; k++ {
		lat = append(lat, max(0, held[k].Sub(released[k-1]).Seconds()*1000))
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[(len(lat)*99)/100], "p99-ms")
}
