// This file measures throughput at 64 resources against etcd's own
// concurrency.Mutex on the same embedded etcd: one contender per resource,
// acquire+release as fast as it can. Besides cycles per second it reports
// the process's CPU time per cycle (on a shared machine the steadier
// figure: both sides are CPU-bound) and, for the registry, how many
// commits one etcd transaction carried. Timings are reported, never
// asserted.
//
//	go test ./registry/etcdstore -run '^$' -bench Throughput64Paired -benchtime 10x -count 5
package etcdstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// throughputResources is how many resources are cycled concurrently.
const throughputResources = 64

// requestSeq numbers the throughput benchmarks' request IDs.
var requestSeq atomic.Int64

// phaseCycles is one side's share of a paired round: ten cycles per
// resource, a few hundred milliseconds.
const phaseCycles = 10 * throughputResources

// BenchmarkThroughput64: each side alone, b.N cycles on any resource.
func BenchmarkThroughput64(b *testing.B) {
	c := benchEtcd(b)
	b.Run("registry", func(b *testing.B) {
		st, ls := registryLockers(b)
		b.ResetTimer()
		d, cpu := runPhase(b, ls, b.N)
		reportRate(b, "", b.N, d, cpu)
		reportBatching(b, st)
	})
	b.Run("etcd-mutex", func(b *testing.B) {
		ls := mutexLockers(b, c)
		b.ResetTimer()
		d, cpu := runPhase(b, ls, b.N)
		reportRate(b, "", b.N, d, cpu)
	})
}

// BenchmarkThroughput64Paired alternates a phase of the registry and one
// of the Mutex, phaseCycles cycles each, so both see the same machine; one
// op is one pair. It reports each side's median rate and CPU per cycle
// and the median of the pairs' rate ratios (registry / Mutex).
func BenchmarkThroughput64Paired(b *testing.B) {
	c := benchEtcd(b)
	st, regLs := registryLockers(b)
	mutLs := mutexLockers(b, c)
	runPhase(b, regLs, phaseCycles) // warm both: caches, connections
	runPhase(b, mutLs, phaseCycles)
	var regRate, mutRate, ratio, regCPU, mutCPU []float64
	b.ResetTimer()
	for b.Loop() {
		rd, rc := runPhase(b, regLs, phaseCycles)
		md, mc := runPhase(b, mutLs, phaseCycles)
		r, m := phaseCycles/rd.Seconds(), phaseCycles/md.Seconds()
		regRate, mutRate, ratio = append(regRate, r), append(mutRate, m), append(ratio, r/m)
		regCPU = append(regCPU, float64(rc.Microseconds())/phaseCycles)
		mutCPU = append(mutCPU, float64(mc.Microseconds())/phaseCycles)
	}
	b.ReportMetric(median(regRate), "registry-cycles/s")
	b.ReportMetric(median(mutRate), "mutex-cycles/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(median(regCPU), "registry-cpu-us/cycle")
	b.ReportMetric(median(mutCPU), "mutex-cpu-us/cycle")
	reportBatching(b, st)
}

func registryLockers(b *testing.B) (*Store, []locker) {
	st := New(benchEtcd(b), fmt.Sprintf("/bench-%d/", prefixSeq.Add(1)), benchBatching(b)...)
	reg := newEarlyRegistry(b, st) // the release answered early (Config.ReleaseEarly)
	var ls []locker
	for i := 0; i < throughputResources; i++ {
		ls = append(ls, &regLocker{reg: reg, owner: "tp", resource: fmt.Sprint("tp/", i)})
	}
	return st, ls
}

func mutexLockers(b *testing.B, c *clientv3.Client) []locker {
	s, err := concurrency.NewSession(c)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	pfx := fmt.Sprintf("/bench-mutex-%d/tp/", prefixSeq.Add(1))
	var ls []locker
	for i := 0; i < throughputResources; i++ {
		ls = append(ls, &mutexLocker{m: concurrency.NewMutex(s, fmt.Sprint(pfx, i))})
	}
	return ls
}

// runPhase runs n acquire+release cycles spread over the lockers, one
// goroutine each, and returns the wall and CPU time they took.
func runPhase(b *testing.B, ls []locker, n int) (time.Duration, time.Duration) {
	ctx := context.Background()
	var (
		mu   sync.Mutex
		left = n
		wg   sync.WaitGroup
		errs = make(chan error, len(ls))
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		left--
		return left >= 0
	}
	t0, cpu0 := time.Now(), cpuTime()
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; take(); i++ {
				if err := l.lock(ctx, int(requestSeq.Add(1))); err != nil {
					errs <- err
					return
				}
				if err := l.unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	d, cpu := time.Since(t0), cpuTime()-cpu0
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return d, cpu
}

func reportRate(b *testing.B, prefix string, n int, d, cpu time.Duration) {
	b.ReportMetric(float64(n)/d.Seconds(), prefix+"cycles/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), prefix+"cpu-us/cycle")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// cpuTime is the CPU time this process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchBatching reads FENCEGATE_BENCH_BATCHING ("writes,inflight", as
// WithBatching takes them), so one binary measures other group-commit
// settings against the defaults:
//
//	FENCEGATE_BENCH_BATCHING=32,1 go test ./registry/etcdstore -run '^$' -bench Throughput64Paired
func benchBatching(b *testing.B) []Option {
	v := os.Getenv("FENCEGATE_BENCH_BATCHING")
	if v == "" {
		return nil
	}
	var writes, inflight int
	if n, err := fmt.Sscanf(v, "%d,%d", &writes, &inflight); n != 2 || err != nil {
		b.Fatalf("FENCEGATE_BENCH_BATCHING=%q: want WRITES,INFLIGHT (%v)", v, err)
	}
	return []Option{WithBatching(writes, inflight)}
}

// reportBatching reports how many commits one etcd transaction carried.
func reportBatching(b *testing.B, st *Store) {
	if txns, writes := batchStats(st); txns > 0 {
		b.ReportMetric(float64(writes)/float64(txns), "writes/txn")
		b.ReportMetric(100*float64(failedWrites(st))/float64(writes), "failed-%")
	}
}
