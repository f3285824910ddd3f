// This file proves that a page of locks costs the same however many
// locks there are (issue 49): a ListLocks page of 100 has the member
// read at most 200 records with 100 held or 100,000, on the in-process
// client serve uses with its embedded member and over gRPC; a full walk
// lists every lock once, in order, reading each about once. Its
// negative control is the same page read with etcd's Range, which
// visits every key to the end of the range to count them: 100,000.
package etcdstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

// Sizes of the listing scale test.
const (
	scaleFew    = 100
	scaleMany   = 100_000
	scalePage   = 100 // ListLimitDefault, what ls and the API ask
	scaleSample = 21  // pages timed per median
	scalePutTxn = 128 // etcd's default --max-txn-ops
)

// scaleRig is one embedded member holding two registries' keys: few
// records under one prefix, many under the other, so pages of both are
// timed in turn on the same member under the same load.
type scaleRig struct {
	t   *testing.T
	ctx context.Context
	em  *Embedded
	mc  *clientv3.Client // over gRPC
	ic  *clientv3.Client // in process
	in  Option           // ic's store option
	// seed is one held record's bytes.
	seed []byte
	n    map[string]int // records under each prefix
}

func newScaleRig(t *testing.T) *scaleRig {
	ctx := context.Background()
	em, mc, ic, in := startTestMember(t, EmbeddedOptions{UnsafeNoFsync: true})
	r := &scaleRig{t: t, ctx: ctx, em: em, mc: mc, ic: ic, in: in, n: map[string]int{}}
	reg := storetest.NewRegistry(t, New(mc, "/seed/"), nil)
	g, err := reg.Acquire(ctx, "worker", wire.AcquireRequest{Resource: "seed", OperationID: "op-seed", OperationClass: "test", RequestID: "seed", TTLMs: 600_000})
	if err != nil || g.Grant == nil {
		t.Fatalf("seed: %+v, %v", g, err)
	}
	resp, err := mc.Get(ctx, "/seed/"+recordDir+"seed")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("seed record: %v, %v", resp, err)
	}
	r.seed = resp.Kvs[0].Value
	return r
}

// store is a store under prefix: in process, over gRPC, or over gRPC
// reading with Range (counted, the negative control).
func (r *scaleRig) store(how, prefix string) *Store {
	switch how {
	case "in-process":
		return New(r.ic, prefix, r.in)
	case "grpc":
		return New(r.mc, prefix)
	}
	st := New(r.mc, prefix)
	st.noStream.set.Store(true)
	return st
}

func scaleName(i int) string { return fmt.Sprintf("res/%07d", i) }

// grow puts held records under prefix until it holds n.
func (r *scaleRig) grow(prefix string, n int) {
	for r.n[prefix] < n {
		var ops []clientv3.Op
		for ; r.n[prefix] < n && len(ops) < scalePutTxn; r.n[prefix]++ {
			ops = append(ops, clientv3.OpPut(prefix+recordDir+scaleName(r.n[prefix]), string(r.seed)))
		}
		if _, err := r.mc.Txn(r.ctx).Then(ops...).Commit(); err != nil {
			r.t.Fatal(err)
		}
	}
}

// pageCost is what a first page of ListLocks cost on one registry:
// the records its store had the member read (the check) and the median
// time (logged only: timings on a shared machine flake).
type pageCost struct {
	read uint64
	took time.Duration
}

// pageCosts reads first pages of ListLocks on a and b in turn.
func (r *scaleRig) pageCosts(a, b *registry.Registry, as, bs *Store, na, nb int) (pageCost, pageCost) {
	var da, db []time.Duration
	var ra, rb uint64
	page := func(reg *registry.Registry, st *Store, n int, read *uint64) time.Duration {
		before := st.RecordsRead()
		start := time.Now()
		l, err := reg.ListLocks(r.ctx, "", "", scalePage, nil)
		d := time.Since(start)
		if err != nil || len(l.Locks) != min(scalePage, n) {
			r.t.Fatalf("page: %d locks, %v", len(l.Locks), err)
		}
		*read = max(*read, st.RecordsRead()-before)
		return d
	}
	for range scaleSample {
		da = append(da, page(a, as, na, &ra))
		db = append(db, page(b, bs, nb, &rb))
	}
	slices.Sort(da)
	slices.Sort(db)
	return pageCost{ra, da[len(da)/2]}, pageCost{rb, db[len(db)/2]}
}

// scaleReadMax bounds the records a page of scalePage may have the
// member read: etcd's stream reads chunks of 10, 20, 40, … so a page
// of 100 reads 150; over gRPC the store counts what it received.
const scaleReadMax = 2 * scalePage

// TestListingPageCostIsFlat counts the records a first page of 100 had
// the member read, with 100 records under the prefix and with 100,000:
// at most scaleReadMax at either size, in process and over gRPC; the
// control, etcd's Range, visits every key to the end of the range
// (100,000) and fails the same bound. A full walk reads each record
// about once. Times are logged, not checked.
func TestListingPageCostIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("fills etcd with 100,000 records")
	}
	r := newScaleRig(t)
	r.grow("/few/", scaleFew)
	r.grow("/many/", scaleMany)
	for _, how := range []string{"in-process", "grpc", "counted"} {
		fewSt, manySt := r.store(how, "/few/"), r.store(how, "/many/")
		few, many := storetest.NewRegistry(t, fewSt, nil), storetest.NewRegistry(t, manySt, nil)
		cFew, cMany := r.pageCosts(few, many, fewSt, manySt, scaleFew, scaleMany)
		t.Logf("%s: page of %d at %d held: %d records read, %v; at %d held: %d read, %v (%.2f× the time)",
			how, scalePage, scaleFew, cFew.read, cFew.took, scaleMany, cMany.read, cMany.took, float64(cMany.took)/float64(cFew.took))
		bounded := cFew.read <= scaleReadMax && cMany.read <= scaleReadMax && cMany.read >= scalePage
		switch {
		case how == "counted" && bounded:
			t.Errorf("control: Range's page at %d held read %d records, within %d: the check cannot tell a counted page from a bounded one", scaleMany, cMany.read, scaleReadMax)
		case how == "counted" && cMany.read < scaleMany:
			t.Errorf("control: Range's page at %d held read %d records, not the range", scaleMany, cMany.read)
		case how != "counted" && !bounded:
			t.Errorf("%s: a page of %d read %d records at %d held and %d at %d: want %d to %d at either", how, scalePage, cFew.read, scaleFew, cMany.read, scaleMany, scalePage, scaleReadMax)
		}
		if how != "counted" && manySt.noStream.set.Load() {
			t.Errorf("%s: read with Range, not RangeStream", how)
		}

		// A full walk in the largest pages lists every lock once, in
		// order, and (streamed) reads each record about once.
		before := manySt.RecordsRead()
		start := time.Now()
		var got []string
		after := ""
		for {
			l, err := many.ListLocks(r.ctx, "", after, registry.ListLimitMax, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range l.Locks {
				got = append(got, v.Resource)
			}
			if after = l.Next; after == "" {
				break
			}
		}
		read := manySt.RecordsRead() - before
		t.Logf("%s: full walk of %d in pages of %d: %d records read, %v", how, len(got), registry.ListLimitMax, read, time.Since(start))
		if len(got) != scaleMany || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != scaleMany {
			t.Fatalf("%s: walked %d locks (sorted %v), want %d distinct in order", how, len(got), slices.IsSorted(got), scaleMany)
		}
		if how != "counted" && read > 2*scaleMany {
			t.Errorf("%s: a full walk of %d read %d records", how, scaleMany, read)
		}
	}
}

// TestListingWithoutRangeStream: a member without RangeStream (etcd
// before 3.7, here etcd's own in-process adapter, which answers
// Unimplemented) is read with Range and lists the same.
func TestListingWithoutRangeStream(t *testing.T) {
	r := newScaleRig(t)
	r.grow("/s/", 250)
	kv := adapter.KvServerToKvClient(v3rpc.NewQuotaKVServer(r.em.etcd.Server))
	c := v3client.New(r.em.etcd.Server)
	defer c.Close()
	c.KV = clientv3.NewKVFromKVClient(kv, c)
	old := New(c, "/s/", func(o *Options) { o.kv = kv })
	want, err := r.store("grpc", "/s/").ScanRecords(r.ctx, "res/", scaleName(10), 200)
	if err != nil {
		t.Fatal(err)
	}
	got, err := old.ScanRecords(r.ctx, "res/", scaleName(10), 200)
	if err != nil {
		t.Fatal(err)
	}
	if !old.noStream.set.Load() {
		t.Error("the adapter's Unimplemented did not turn the store to Range")
	}
	if len(got) != 200 || len(want) != 200 || got[0].Resource != scaleName(11) || got[199].Resource != want[199].Resource {
		t.Fatalf("without RangeStream %d records from %s, with it %d", len(got), got[0].Resource, len(want))
	}
}

// TestPageReadsRowControl is storetest's PageReadsItsLimit row (which
// every store passes) on a store reading with Range: each page visits
// every key to the end of the range, above the row's bound at the front
// and the middle (the last full page has nothing after it).
func TestPageReadsRowControl(t *testing.T) {
	_, mc, _, _ := startTestMember(t, EmbeddedOptions{UnsafeNoFsync: true})
	st := New(mc, "/control/")
	st.noStream.set.Store(true)
	reads := storetest.PageReads(t, st)
	for i, n := range reads[:2] {
		if n <= 2*storetest.PageReadsLimit {
			t.Errorf("control: page %d read %d records with Range (all: %v): the row cannot tell it from a bounded page", i+2, n, reads)
		}
	}
	t.Logf("with Range, pages of %d over %d records read %v", storetest.PageReadsLimit, storetest.PageReadsRecords, reads)
}
