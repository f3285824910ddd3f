// This file measures what batch-signed grants (registry.Config.
// BatchGrantProofs) do to throughput at 64 resources: three phases
// alternate on one embedded etcd — the registry signing each grant alone,
// the registry signing batches, etcd's concurrency.Mutex — so all three
// see the same machine. Timings are reported, never asserted.
//
//	go test ./registry/etcdstore -run '^$' -bench Throughput64BatchProofsPaired -benchtime 5x
package etcdstore

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// BenchmarkThroughput64BatchProofsPaired: one op is one round of the
// three phases, phaseCycles cycles each, the Mutex's in the middle. It reports each side's median
// rate and CPU per cycle, and the medians of the rounds' ratios: single
// and batch against the Mutex, and batch against single.
func BenchmarkThroughput64BatchProofsPaired(b *testing.B) {
	c := benchEtcd(b)
	_, single := registryLockersWith(b, false)
	_, batched := registryLockersWith(b, true)
	var counts batchCounts
	for i, l := range batched {
		batched[i] = &countingLocker{regLocker: l.(*regLocker), counts: &counts}
	}
	mutLs := mutexLockers(b, c)
	for _, ls := range [][]locker{single, batched, mutLs} {
		runPhase(b, ls, phaseCycles) // warm: caches, connections
	}
	var sRate, bRate, mRate, sCPU, bCPU, sRatio, bRatio, bsRatio []float64
	b.ResetTimer()
	for round := 0; b.Loop(); round++ {
		// Single and batch swap places every round, so that neither
		// always follows the Mutex's phase.
		first, second := single, batched
		if round%2 == 1 {
			first, second = batched, single
		}
		d1, c1 := runPhase(b, first, phaseCycles)
		md, _ := runPhase(b, mutLs, phaseCycles)
		d2, c2 := runPhase(b, second, phaseCycles)
		sd, sc, bd, bc := d1, c1, d2, c2
		if round%2 == 1 {
			sd, sc, bd, bc = d2, c2, d1, c1
		}
		s, bt, m := phaseCycles/sd.Seconds(), phaseCycles/bd.Seconds(), phaseCycles/md.Seconds()
		sRate, bRate, mRate = append(sRate, s), append(bRate, bt), append(mRate, m)
		sRatio, bRatio, bsRatio = append(sRatio, s/m), append(bRatio, bt/m), append(bsRatio, bt/s)
		sCPU = append(sCPU, float64(sc.Microseconds())/phaseCycles)
		bCPU = append(bCPU, float64(bc.Microseconds())/phaseCycles)
	}
	b.ReportMetric(median(sRate), "single-cycles/s")
	b.ReportMetric(median(bRate), "batch-cycles/s")
	b.ReportMetric(median(mRate), "mutex-cycles/s")
	b.ReportMetric(median(sRatio), "single/mutex")
	b.ReportMetric(median(bRatio), "batch/mutex")
	b.ReportMetric(median(bsRatio), "batch/single")
	b.ReportMetric(median(sCPU), "single-cpu-us/cycle")
	b.ReportMetric(median(bCPU), "batch-cpu-us/cycle")
	if g := counts.grants.Load(); g > 0 {
		b.ReportMetric(float64(counts.sigs.Load())/float64(g), "batch-sigs/grant")
	}
}

// batchCounts counts batch-signed grants and their signatures (one per
// group: the proofs at index 0).
type batchCounts struct{ grants, sigs atomic.Int64 }

// countingLocker is a regLocker that counts its grants' signatures.
type countingLocker struct {
	*regLocker
	counts *batchCounts
}

func (l *countingLocker) lock(ctx context.Context, seq int) error {
	is, err := l.reg.Acquire(ctx, l.owner, benchReq(l.resource, seq, l.waitMs))
	if err != nil {
		return err
	}
	l.lease = is.Grant.Lease
	l.counts.grants.Add(1)
	if p, err := grant.ParseBatchProof(is.GrantProof); err == nil && p.Index == 0 {
		l.counts.sigs.Add(1)
	}
	return nil
}

// registryLockersWith is registryLockers with batch signing on or off,
// on a store of its own.
func registryLockersWith(b *testing.B, batchProofs bool) (*Store, []locker) {
	st := New(benchEtcd(b), fmt.Sprintf("/bench-%d/", prefixSeq.Add(1)), benchBatching(b)...)
	k, err := grant.GenerateKey(grant.AlgEd25519, "bench", bytes.NewReader(bytes.Repeat([]byte{1}, 32)))
	if err != nil {
		b.Fatal(err)
	}
	cfg := registry.DefaultConfig(1)
	cfg.BatchGrantProofs = batchProofs
	reg, err := registry.New(st, cfg, clock.System{}, k)
	if err != nil {
		b.Fatal(err)
	}
	var ls []locker
	for i := 0; i < throughputResources; i++ {
		ls = append(ls, &regLocker{reg: reg, owner: "tp", resource: fmt.Sprint("tp/", i)})
	}
	return st, ls
}
