// This file measures what a lock cycle stores: puts and value bytes per
// uncontended acquire+release on the embedded etcd, counted by a store
// wrapper in the form the store writes by default (EncodeRecord,
// EncodeRequestEntry). Sizes are reported, never asserted.
//
//	go test ./registry/etcdstore -run '^$' -bench CycleBytes -benchtime 200x
package etcdstore

import (
	"context"
	"fmt"
	"testing"

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
