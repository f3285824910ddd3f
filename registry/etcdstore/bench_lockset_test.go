// This file measures a lock set's cost on a real (embedded) etcd beside
// what a caller would do without one: take a set of two members and
// release it (two store transactions; the acquire decided on the cache,
// the release after a ReadSet), against taking two plain locks in sorted
// order and releasing them (four, each on the cache). Uncontended, one
// caller, ungrouped commits:
//
//	go test ./registry/etcdstore -run '^$' -bench 'LockSetCycle' -benchtime 300x -count 5
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

func BenchmarkLockSetCycle(b *testing.B) {
	ctx := context.Background()
	reg := storetest.NewRegistry(b, New(testClient, fmt.Sprintf("/bench-%d/", prefixSeq.Add(1)), WithBatching(1, 0)), nil)
	members := []string{"acct/a", "acct/b"}
	b.Run("set2", func(b *testing.B) {
		for i := range b.N {
			is, err := reg.AcquireSet(ctx, "w", wire.LockSetRequest{Members: members, OperationID: "op", OperationClass: "settle", RequestID: fmt.Sprint("s", i, "-", b.N)})
			if err != nil {
				b.Fatal(err)
			}
			var leases []wire.LeaseRequest
			for _, m := range is.Members {
				leases = append(leases, wire.LeaseRequest{Resource: m.Grant.Resource, Lease: m.Grant.Lease})
			}
			if err := reg.ReleaseSet(ctx, "w", leases); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain2", func(b *testing.B) {
		for i := range b.N {
			var held []wire.Issued
			for j, m := range members {
				is, err := reg.Acquire(ctx, "w", wire.AcquireRequest{Resource: m, OperationID: "op", OperationClass: "settle", RequestID: fmt.Sprint("p", i, "-", j, "-", b.N)})
				if err != nil {
					b.Fatal(err)
				}
				held = append(held, is)
			}
			for _, is := range held {
				if err := reg.Release(ctx, "w", is.Grant.Resource, is.Grant.Lease); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// The benchmarks below set a lock set against what a user of etcd would
// do instead (issue 46): take two concurrency.Mutexes in sorted order
// (the order is what keeps them from deadlocking) and unlock both, on
// the same embedded etcd (fsync on), the two sides alternating so both
// see the same machine. Timings are reported, never asserted.
//
//	go test ./registry/etcdstore -run '^$' -bench 'LockSet(CycleInterleaved|64Paired)$' -benchtime 5x -count 5

// lockSetBenchCallers is how many callers take pairs at once, each pair
// drawn from throughputResources resources, so they contend.
const lockSetBenchCallers = throughputResources

// lockSetPhaseCycles is one side's share of a paired round.
const lockSetPhaseCycles = 10 * lockSetBenchCallers

// BenchmarkLockSetCycleInterleaved alternates one lock-set cycle (a set
// of two taken and released: AcquireSet, ReleaseSet) with one cycle of
// two Mutexes locked in sorted order and unlocked, uncontended; one op
// is one of each. It reports each side's median cycle and the median of
// the per-op ratios (set / Mutexes).
func BenchmarkLockSetCycleInterleaved(b *testing.B) {
	c := benchEtcd(b)
	ctx := context.Background()
	reg := benchRegistry(b, c)
	members := []string{"acct/a", "acct/b"}
	s, err := concurrency.NewSession(c)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	pfx := fmt.Sprintf("/bench-mutex-%d/", prefixSeq.Add(1))
	m1, m2 := concurrency.NewMutex(s, pfx+members[0]), concurrency.NewMutex(s, pfx+members[1])
	var setTimes, mutexTimes, ratios []float64
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		is, err := reg.AcquireSet(ctx, "bench", wire.LockSetRequest{Members: members, OperationID: "op", OperationClass: "bench",
			RequestID: fmt.Sprint("c", i), TTLMs: 30_000})
		if err != nil {
			b.Fatal(err)
		}
		if err := reg.ReleaseSet(ctx, "bench", setLeaseRequests(is)); err != nil {
			b.Fatal(err)
		}
		st := float64(time.Since(t0).Microseconds())
		t1 := time.Now()
		if err := lockSorted(ctx, m1, m2); err != nil {
			b.Fatal(err)
		}
		if err := unlockBoth(ctx, m1, m2); err != nil {
			b.Fatal(err)
		}
		mt := float64(time.Since(t1).Microseconds())
		setTimes, mutexTimes, ratios = append(setTimes, st), append(mutexTimes, mt), append(ratios, st/mt)
	}
	b.ReportMetric(median(setTimes), "set-us/cycle")
	b.ReportMetric(median(mutexTimes), "mutex2-us/cycle")
	b.ReportMetric(median(ratios), "ratio")
}

// BenchmarkLockSet64Paired alternates a phase of lockSetBenchCallers
// callers taking lock sets of two members drawn from throughputResources
// resources (waiting for them: a set that cannot have both queues on
// both) with a phase of as many callers taking two Mutexes in sorted
// order over the same draw, lockSetPhaseCycles cycles each; one op is
// one pair of phases. It reports each side's median rate and CPU per
// cycle, the median of the pairs' rate ratios (set / Mutexes), and the
// CONFLICT answers the set side retried and the time it slept for them.
func BenchmarkLockSet64Paired(b *testing.B) {
	c := benchEtcd(b)
	st, setLs := lockSetLockers(b, c)
	mutLs := mutexPairLockers(b, c)
	runPhase(b, setLs, lockSetPhaseCycles) // warm both
	runPhase(b, mutLs, lockSetPhaseCycles)
	var setRate, mutRate, ratio, setCPU, mutCPU []float64
	conflicts0, backoff0 := setConflicts.Load(), setBackoffNs.Load()
	b.ResetTimer()
	for b.Loop() {
		sd, sc := runPhase(b, setLs, lockSetPhaseCycles)
		md, mc := runPhase(b, mutLs, lockSetPhaseCycles)
		s, m := lockSetPhaseCycles/sd.Seconds(), lockSetPhaseCycles/md.Seconds()
		setRate, mutRate, ratio = append(setRate, s), append(mutRate, m), append(ratio, s/m)
		setCPU = append(setCPU, float64(sc.Microseconds())/lockSetPhaseCycles)
		mutCPU = append(mutCPU, float64(mc.Microseconds())/lockSetPhaseCycles)
	}
	b.ReportMetric(median(setRate), "set-cycles/s")
	b.ReportMetric(median(mutRate), "mutex2-cycles/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(median(setCPU), "set-cpu-us/cycle")
	b.ReportMetric(median(mutCPU), "mutex2-cpu-us/cycle")
	b.ReportMetric(1000*float64(setConflicts.Load()-conflicts0)/float64(b.N*lockSetPhaseCycles), "set-conflicts/1k-cycles")
	b.ReportMetric(float64(setBackoffNs.Load()-backoff0)/1e6/float64(b.N), "set-backoff-ms/phase")
	reportBatching(b, st)
}

func setLeaseRequests(is wire.IssuedSet) []wire.LeaseRequest {
	var leases []wire.LeaseRequest
	for _, m := range is.Members {
		leases = append(leases, wire.LeaseRequest{Resource: m.Grant.Resource, Lease: m.Grant.Lease})
	}
	return leases
}

// pairResource names resource i of the benchmark's draw; the names sort
// as the indexes do.
func pairResource(i int) string { return fmt.Sprintf("ls/%02d", i) }

// drawPair draws two distinct resource indexes, smaller first.
func drawPair(rng *rand.Rand) (int, int) {
	i := rng.IntN(throughputResources)
	j := rng.IntN(throughputResources - 1)
	if j >= i {
		j++
	}
	return min(i, j), max(i, j)
}

// setLocker takes a lock set of two drawn members and releases it.
type setLocker struct {
	reg    *registry.Registry
	owner  string
	rng    *rand.Rand
	leases []wire.LeaseRequest
}

func (l *setLocker) lock(ctx context.Context, seq int) error {
	i, j := drawPair(l.rng)
	req := wire.LockSetRequest{Members: []string{pairResource(i), pairResource(j)},
		OperationID: "op", OperationClass: "bench", RequestID: fmt.Sprint("s", seq), TTLMs: 30_000, WaitMs: 30_000}
	return l.retryConflicts(ctx, func() error {
		is, err := l.reg.AcquireSet(ctx, l.owner, req)
		if err == nil {
			l.leases = setLeaseRequests(is)
		}
		return err
	})
}

func (l *setLocker) unlock(ctx context.Context) error {
	return l.retryConflicts(ctx, func() error { return l.reg.ReleaseSet(ctx, l.owner, l.leases) })
}

// setConflicts counts the CONFLICT answers the set side retried, and
// setBackoffNs the time it slept before retrying them.
var setConflicts, setBackoffNs atomic.Int64

// retryConflicts calls f until it answers other than CONFLICT ("nothing
// changed, try again"), sleeping between calls as the SDK does (client/core:
// from AcquireBackoffMin, doubling to AcquireBackoffMax, jittered ±50%);
// the same request ID, so a retry is the same acquire.
func (l *setLocker) retryConflicts(ctx context.Context, f func() error) error {
	backoff := core.AcquireBackoffMin
	for {
		err := f()
		if !errors.Is(err, wire.ErrConflict) {
			return err
		}
		setConflicts.Add(1)
		d := time.Duration(float64(backoff) * (0.5 + l.rng.Float64()))
		setBackoffNs.Add(int64(d))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		backoff = min(2*backoff, core.AcquireBackoffMax)
	}
}

func lockSetLockers(b *testing.B, c *clientv3.Client) (*Store, []locker) {
	st := New(c, fmt.Sprintf("/bench-%d/", prefixSeq.Add(1)), benchBatching(b)...)
	reg := storetest.NewRegistry(b, st, nil)
	var ls []locker
	for k := range lockSetBenchCallers {
		ls = append(ls, &setLocker{reg: reg, owner: fmt.Sprint("ls-", k), rng: rand.New(rand.NewPCG(1, uint64(k)))})
	}
	return st, ls
}

// mutexPairLocker locks two drawn Mutexes in sorted order and unlocks
// both. Each caller has a session of its own: a Mutex's key is its
// prefix and its session's lease, so two callers on one session would
// both "hold" the same Mutex.
type mutexPairLocker struct {
	s    *concurrency.Session
	pfx  string
	rng  *rand.Rand
	held [2]*concurrency.Mutex
}

func (l *mutexPairLocker) lock(ctx context.Context, _ int) error {
	i, j := drawPair(l.rng)
	l.held = [2]*concurrency.Mutex{concurrency.NewMutex(l.s, l.pfx+pairResource(i)), concurrency.NewMutex(l.s, l.pfx+pairResource(j))}
	return lockSorted(ctx, l.held[0], l.held[1])
}

func (l *mutexPairLocker) unlock(ctx context.Context) error {
	return unlockBoth(ctx, l.held[0], l.held[1])
}

func mutexPairLockers(b *testing.B, c *clientv3.Client) []locker {
	pfx := fmt.Sprintf("/bench-mutex-%d/", prefixSeq.Add(1))
	var ls []locker
	for k := range lockSetBenchCallers {
		s, err := concurrency.NewSession(c)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		ls = append(ls, &mutexPairLocker{s: s, pfx: pfx, rng: rand.New(rand.NewPCG(1, uint64(k)))})
	}
	return ls
}

// lockSorted locks first then second (the callers' common order); if the
// second fails it unlocks the first.
func lockSorted(ctx context.Context, first, second *concurrency.Mutex) error {
	if err := first.Lock(ctx); err != nil {
		return err
	}
	if err := second.Lock(ctx); err != nil {
		return errors.Join(err, first.Unlock(ctx))
	}
	return nil
}

func unlockBoth(ctx context.Context, first, second *concurrency.Mutex) error {
	return errors.Join(second.Unlock(ctx), first.Unlock(ctx))
}
