// This file measures what a lock cycle stores: puts and value bytes per
// uncontended acquire+release on the embedded etcd, counted by a store
// wrapper in the form the store writes by default (EncodeRecord,
// EncodeRequestEntry). Sizes are reported, never asserted.
//
//	go test ./registry/etcdstore -run '^$' -bench CycleBytes -benchtime 200x
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
)

// countingStore counts the puts and value bytes of the commits that pass.
type countingStore struct {
	registry.Store
	recordPuts, entryPuts, recordBytes, entryBytes int
}

func (s *countingStore) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	res, err := s.Store.Commit(ctx, w)
	if err != nil || !res.OK {
		return res, err
	}
	if w.Record != nil {
		s.recordPuts++
		s.recordBytes += len(registry.EncodeRecord(w.Record))
	}
	for _, rw := range w.Requests {
		if rw.Entry != nil {
			s.entryPuts++
			s.entryBytes += len(registry.EncodeRequestEntry(rw.Entry))
		}
	}
	return res, nil
}

// BenchmarkCycleBytes: one acquire+release cycle; reports puts and value
// bytes stored per cycle.
func BenchmarkCycleBytes(b *testing.B) {
	st := &countingStore{Store: New(benchEtcd(b), fmt.Sprintf("/bench-%d/", prefixSeq.Add(1)))}
	reg := storetest.NewRegistry(b, st, nil)
	ctx := context.Background()
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
	n := float64(b.N)
	b.ReportMetric(float64(st.recordPuts+st.entryPuts)/n, "puts/cycle")
	b.ReportMetric(float64(st.recordBytes+st.entryBytes)/n, "value-B/cycle")
	b.ReportMetric(float64(st.recordBytes)/float64(max(st.recordPuts, 1)), "B/record")
	b.ReportMetric(float64(st.entryBytes)/float64(max(st.entryPuts, 1)), "B/entry")
}

// BenchmarkLiveBytes: what stays live in etcd per held lease and per
// finished cycle (acquire and release, its request entry and sweep item
// kept for the retention), beside a held and a finished
// concurrency.Mutex on the same member. kv-B is the keys and values left
// under the prefix (read back); inuse-B is the growth of etcd's size in
// use after a compaction to the current revision (bbolt's pages, so
// with its indexes and the page slack). Each op is one lease held or one
// cycle finished; sizes are reported, never asserted. A member of its
// own (without fsync: bytes do not depend on it):
//
//	go test ./registry/etcdstore -run '^$' -bench LiveBytes -benchtime 20000x
func BenchmarkLiveBytes(b *testing.B) {
	ctx := context.Background()
	em, err := StartEmbedded(ctx, b.TempDir(), EmbeddedOptions{UnsafeNoFsync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer em.Close()
	c, err := em.Client()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// inUse compacts to the current revision and returns the size in use.
	inUse := func(b *testing.B) int64 {
		resp, err := c.Get(ctx, "live-probe")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			b.Fatal(err)
		}
		st, err := c.Status(ctx, em.Endpoints()[0])
		if err != nil {
			b.Fatal(err)
		}
		return st.DbSizeInUse
	}
	kvBytes := func(b *testing.B, prefix string) int64 {
		resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, kv := range resp.Kvs {
			n += len(kv.Key) + len(kv.Value)
		}
		return int64(n)
	}
	// measure runs op b.N times under a fresh prefix and reports the
	// live bytes per op as unit.
	measure := func(b *testing.B, unit string, op func(prefix string, i int) error) {
		prefix := fmt.Sprintf("/live-%d/", prefixSeq.Add(1))
		kv0, use0 := kvBytes(b, prefix), inUse(b)
		b.ResetTimer()
		for i := range b.N {
			if err := op(prefix, i); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		kv1, use1 := kvBytes(b, prefix), inUse(b)
		b.ReportMetric(float64(kv1-kv0)/float64(b.N), "kv-B/"+unit)
		b.ReportMetric(float64(use1-use0)/float64(b.N), "inuse-B/"+unit)
	}
	registryOn := func(prefix string) *registry.Registry { return storetest.NewRegistry(b, New(c, prefix), nil) }
	b.Run("held/registry", func(b *testing.B) {
		var reg *registry.Registry
		measure(b, "lease", func(prefix string, i int) error {
			if i == 0 {
				reg = registryOn(prefix)
			}
			_, err := reg.Acquire(ctx, "bench", benchReq(fmt.Sprint("held/", i), i, 0))
			return err
		})
	})
	b.Run("held/mutex", func(b *testing.B) {
		s, err := concurrency.NewSession(c)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		measure(b, "lease", func(prefix string, i int) error {
			return concurrency.NewMutex(s, fmt.Sprint(prefix, "held/", i)).Lock(ctx)
		})
	})
	// A finished cycle on one of 64 resources in turn: the records are
	// written before the count starts, so what grows is what each cycle
	// leaves.
	b.Run("finished/registry", func(b *testing.B) {
		var reg *registry.Registry
		measure(b, "cycle", func(prefix string, i int) error {
			if i == 0 {
				reg = registryOn(prefix)
			}
			resource := fmt.Sprint("cycle/", i%64)
			is, err := reg.Acquire(ctx, "bench", benchReq(resource, i, 0))
			if err != nil {
				return err
			}
			return reg.Release(ctx, "bench", resource, is.Grant.Lease)
		})
	})
	b.Run("finished/mutex", func(b *testing.B) {
		s, err := concurrency.NewSession(c)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		measure(b, "cycle", func(prefix string, i int) error {
			m := concurrency.NewMutex(s, fmt.Sprint(prefix, "cycle/", i%64))
			if err := m.Lock(ctx); err != nil {
				return err
			}
			return m.Unlock(ctx)
		})
	})
}
