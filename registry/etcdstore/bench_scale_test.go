package etcdstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegate/fencegate/testkit/storetest"
)

// BenchmarkCycleAtHeld: one acquire+release cycle on one resource,
// alternating with one cycle of etcd's Mutex, on an embedded member with
// fsync on where N other locks are held: N = 0 and 100,000 (issue 49
// wants a cycle not to grow with N). The registry's N are records copied
// from one real held grant under other names; the Mutex's, N held
// mutexes (a key each under its own prefix, on one lease). Reports each
// side's median cycle and their ratio, per N.
func BenchmarkCycleAtHeld(b *testing.B) {
	for _, n := range []int{0, scaleMany} {
		b.Run(fmt.Sprintf("held=%d", n), func(b *testing.B) {
			ctx := context.Background()
			_, mc, _, _ := startTestMember(b, EmbeddedOptions{})
			reg := storetest.NewRegistry(b, New(mc, "/scale/"), nil) // both sides over the same client, as BenchmarkAcquireReleaseInterleaved
			if _, err := reg.Acquire(ctx, "bench", benchReq("seed", 0, 0)); err != nil {
				b.Fatal(err)
			}
			resp, err := mc.Get(ctx, "/scale/"+recordDir+"seed")
			if err != nil || len(resp.Kvs) != 1 {
				b.Fatalf("seed record: %v, %v", resp, err)
			}
			lease, err := mc.Grant(ctx, 3600)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < n; {
				var ops []clientv3.Op
				for ; i < n && len(ops) < scalePutTxn; i += 2 {
					ops = append(ops,
						clientv3.OpPut(fmt.Sprintf("/scale/%sheld/%07d", recordDir, i), string(resp.Kvs[0].Value)),
						clientv3.OpPut(fmt.Sprintf("/mutexes/held-%07d/%x", i, lease.ID), "", clientv3.WithLease(lease.ID)))
				}
				if _, err := mc.Txn(ctx).Then(ops...).Commit(); err != nil {
					b.Fatal(err)
				}
			}
			s, err := concurrency.NewSession(mc)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			m := concurrency.NewMutex(s, "/mutexes/cycle")
			var regTimes, mutexTimes []float64
			i := 0
			for b.Loop() {
				i++
				t0 := time.Now()
				is, err := reg.Acquire(ctx, "bench", benchReq("cycle/1", i, 0))
				if err != nil {
					b.Fatal(err)
				}
				if err := reg.Release(ctx, "bench", "cycle/1", is.Grant.Lease); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := m.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
				regTimes = append(regTimes, float64(t1.Sub(t0).Microseconds()))
				mutexTimes = append(mutexTimes, float64(time.Since(t1).Microseconds()))
			}
			b.ReportMetric(median(regTimes), "registry-us/cycle")
			b.ReportMetric(median(mutexTimes), "mutex-us/cycle")
			b.ReportMetric(median(regTimes)/median(mutexTimes), "ratio")
		})
	}
}

// BenchmarkSustainedLiveSize is TestSustainedCyclesKeepTheStoreFlat's
// run with the sweep on, as a figure for the scale record: 16 workers
// cycling on the embedded member (fsync on) with the registry clock run
// 500× so the default retention passes in seconds; it reports the live
// size (bytes in use, keys) as the last third's median, and its growth
// over the first third's (flat: about 1). A finished Mutex cycle keeps
// nothing, so there is no counterpart. One run whatever b.N.
func BenchmarkSustainedLiveSize(b *testing.B) {
	r := runSustained(b, true, sustainedMeasure(b))
	keys, inUse := r.growth(b, "sweep on")
	_, lastInUse := thirds(r.samples, func(s sustainedSample) float64 { return float64(s.inUse) })
	_, lastKeys := thirds(r.samples, func(s sustainedSample) float64 { return float64(s.keys) })
	for b.Loop() {
	}
	b.ReportMetric(lastInUse/1e6, "inuse-MB")
	b.ReportMetric(lastKeys, "keys")
	b.ReportMetric(inUse, "inuse-growth")
	b.ReportMetric(keys, "keys-growth")
	b.ReportMetric(float64(r.cycles)/r.measured.Seconds(), "cycles/s")
}
