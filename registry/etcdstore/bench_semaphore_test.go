// This file measures the counting semaphore at 64 resources against the
// semaphore a user of etcd would build instead, on the same embedded
// etcd: a Consul-style recipe over etcd's concurrency package (each
// holder puts a key of its own under the semaphore's prefix, with its
// session's lease; it holds a permit when its key is among the first N by
// create revision, else it watches the prefix for a delete and counts
// again; release deletes the key). 64 semaphores of 3 permits, 4
// contenders each, acquire+release as fast as they can; the two sides
// alternate phases so both see the same machine. Timings are reported,
// never asserted.
//
//	go test ./registry/etcdstore -run '^$' -bench Semaphore64Paired -benchtime 5x -count 5
package etcdstore

import (
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
)

// The semaphore benchmark's shape: semaphores, permits each, contenders
// each (more than the permits, so some wait).
const (
	semBenchResources   = throughputResources
	semBenchPermits     = 3
	semBenchContenders  = 4
	semBenchPhaseCycles = 10 * semBenchResources
)

// BenchmarkSemaphore64Paired alternates a phase of the registry's
// semaphores and one of the etcd recipe's, semBenchPhaseCycles cycles
// each; one op is one pair. It reports each side's median rate and CPU
// per cycle and the median of the pairs' rate ratios (registry / etcd).
func BenchmarkSemaphore64Paired(b *testing.B) {
	c := benchEtcd(b)
	st, regLs := registrySemLockers(b, c)
	etcdLs := etcdSemLockers(b, c)
	runPhase(b, regLs, semBenchPhaseCycles) // warm both
	runPhase(b, etcdLs, semBenchPhaseCycles)
	var regRate, etcdRate, ratio, regCPU, etcdCPU []float64
	b.ResetTimer()
	for b.Loop() {
		rd, rc := runPhase(b, regLs, semBenchPhaseCycles)
		ed, ec := runPhase(b, etcdLs, semBenchPhaseCycles)
		r, e := semBenchPhaseCycles/rd.Seconds(), semBenchPhaseCycles/ed.Seconds()
		regRate, etcdRate, ratio = append(regRate, r), append(etcdRate, e), append(ratio, r/e)
		regCPU = append(regCPU, float64(rc.Microseconds())/semBenchPhaseCycles)
		etcdCPU = append(etcdCPU, float64(ec.Microseconds())/semBenchPhaseCycles)
	}
	b.ReportMetric(median(regRate), "registry-cycles/s")
	b.ReportMetric(median(etcdRate), "etcd-sem-cycles/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(median(regCPU), "registry-cpu-us/cycle")
	b.ReportMetric(median(etcdCPU), "etcd-sem-cpu-us/cycle")
	reportBatching(b, st)
}

// semRegLocker takes one permit of a registry semaphore; it releases the
// slot its grant names.
type semRegLocker struct {
	reg         *registry.Registry
	owner, name string
	slot, lease string
}

func (l *semRegLocker) lock(ctx context.Context, seq int) error {
	req := benchReq(l.name, seq, 30_000)
	req.Permits = semBenchPermits
	is, err := l.reg.Acquire(ctx, l.owner, req)
	if err == nil {
		l.slot, l.lease = is.Grant.Resource, is.Grant.Lease
	}
	return err
}

func (l *semRegLocker) unlock(ctx context.Context) error {
	return l.reg.Release(ctx, l.owner, l.slot, l.lease)
}

func registrySemLockers(b *testing.B, c *clientv3.Client) (*Store, []locker) {
	st := New(c, fmt.Sprintf("/bench-%d/", prefixSeq.Add(1)), benchBatching(b)...)
	reg := storetest.NewRegistry(b, st, nil)
	var ls []locker
	for i := range semBenchResources {
		for j := range semBenchContenders {
			ls = append(ls, &semRegLocker{reg: reg, owner: fmt.Sprint("sem-", j), name: fmt.Sprint("sem/", i)})
		}
	}
	return st, ls
}

// etcdSemLocker is the Consul-style semaphore over etcd: a key per
// holder under the semaphore's prefix, counted by create revision.
type etcdSemLocker struct {
	c        *clientv3.Client
	s        *concurrency.Session
	pfx, key string
}

func (l *etcdSemLocker) lock(ctx context.Context, _ int) error {
	put, err := l.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", 0)).
		Then(clientv3.OpPut(l.key, "", clientv3.WithLease(l.s.Lease()))).Commit()
	if err != nil {
		return err
	}
	if !put.Succeeded {
		return fmt.Errorf("etcd semaphore: %s already held", l.key)
	}
	for {
		g, err := l.c.Get(ctx, l.pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(semBenchPermits))
		if err != nil {
			return err
		}
		for _, kv := range g.Kvs {
			if string(kv.Key) == l.key {
				return nil
			}
		}
		if err := l.waitDelete(ctx, g.Header.Revision+1); err != nil {
			return err
		}
	}
}

// waitDelete waits for a delete under the prefix at or after rev.
func (l *etcdSemLocker) waitDelete(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range l.c.Watch(wctx, l.pfx, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFilterPut()) {
		if err := wr.Err(); err != nil {
			return err
		}
		if len(wr.Events) > 0 {
			return nil
		}
	}
	return ctx.Err()
}

func (l *etcdSemLocker) unlock(ctx context.Context) error {
	_, err := l.c.Delete(ctx, l.key)
	return err
}

func etcdSemLockers(b *testing.B, c *clientv3.Client) []locker {
	s, err := concurrency.NewSession(c)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	base := fmt.Sprintf("/bench-etcd-sem-%d/", prefixSeq.Add(1))
	var ls []locker
	for i := range semBenchResources {
		pfx := fmt.Sprintf("%s%d/", base, i)
		for j := range semBenchContenders {
			ls = append(ls, &etcdSemLocker{c: c, s: s, pfx: pfx, key: fmt.Sprintf("%s%x-%d", pfx, s.Lease(), j)})
		}
	}
	return ls
}
