// This file measures the registry on ZooKeeper (a server with fsync on, as
// in production) against the lock a ZooKeeper user would otherwise take,
// the client's own recipe (zk.Lock: an ephemeral sequential node, then a
// watch on its predecessor), in the same run. Timings are reported, never
// asserted. Compare with the etcd store's benchmark of the same name:
//
//	go test ./registry/zkstore -run '^$' -bench . -benchtime 1280x -count 5
//	go test ./registry/etcdstore -run '^$' -bench 'AcquireRelease$/registry|Throughput64$/registry' -benchtime 1280x -count 5
package zkstore

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/testkit/zktest"
	"github.com/fencegate/fencegate/wire"
)

var (
	benchOnce sync.Once
	benchConn *zk.Conn
	benchErr  error
)

// benchServer starts one server with fsync on for all benchmarks; it
// lives until the test binary exits.
func benchServer(b *testing.B) *zk.Conn {
	server(b)
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zkstore-bench-")
		if err != nil {
			benchErr = err
			return
		}
		srv, err := zktest.New(dir, zktest.Options{Fsync: true})
		if err != nil {
			benchErr = err
			return
		}
		benchConn, benchErr = Dial(context.Background(), ClientConfig{Servers: []string{srv.Addr}}, "/")
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchConn
}

func benchReq(resource string, i int) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: resource, OperationID: "op", OperationClass: "bench", RequestID: fmt.Sprint("r", i), TTLMs: 30_000}
}

// BenchmarkAcquireRelease: one uncontended acquire+release cycle.
func BenchmarkAcquireRelease(b *testing.B) {
	c := benchServer(b)
	ctx := context.Background()
	b.Run("registry", func(b *testing.B) {
		s, err := New(ctx, c, fmt.Sprintf("/bench-%d", rootSeq.Add(1)), nil)
		if err != nil {
			b.Fatal(err)
		}
		reg := storetest.NewRegistry(b, s, nil)
		i := 0
		for b.Loop() {
			i++
			is, err := reg.Acquire(ctx, "bench", benchReq("cycle/1", i))
			if err != nil {
				b.Fatal(err)
			}
			if err := reg.Release(ctx, "bench", "cycle/1", is.Grant.Lease); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("zk.Lock", func(b *testing.B) {
		l := zk.NewLock(c, fmt.Sprintf("/bench-lock-%d", rootSeq.Add(1)), zk.WorldACL(zk.PermAll))
		for b.Loop() {
			if err := l.Lock(); err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// throughputResources is how many resources BenchmarkThroughput64 cycles
// at once, one contender each, as the etcd store's benchmark of the same
// name does: there commits in flight share transactions, here they are
// pipelined multis.
const throughputResources = 64

// BenchmarkThroughput64: b.N acquire+release cycles spread over 64
// resources, each cycled by its own goroutine, through the registry and
// through zk.Lock; reports cycles/s.
func BenchmarkThroughput64(b *testing.B) {
	c := benchServer(b)
	ctx := context.Background()
	b.Run("registry", func(b *testing.B) {
		s, err := New(ctx, c, fmt.Sprintf("/bench-%d", rootSeq.Add(1)), nil)
		if err != nil {
			b.Fatal(err)
		}
		reg := storetest.NewRegistry(b, s, nil)
		runThroughput(b, func(r int) func(i int) error {
			resource := fmt.Sprint("tp/", r)
			return func(i int) error {
				is, err := reg.Acquire(ctx, "bench", benchReq(resource, i))
				if err != nil {
					return err
				}
				return reg.Release(ctx, "bench", resource, is.Grant.Lease)
			}
		})
	})
	b.Run("zk.Lock", func(b *testing.B) {
		root := fmt.Sprintf("/bench-lock-%d", rootSeq.Add(1))
		runThroughput(b, func(r int) func(int) error {
			l := zk.NewLock(c, fmt.Sprint(root, "/", r), zk.WorldACL(zk.PermAll))
			return func(int) error {
				if err := l.Lock(); err != nil {
					return err
				}
				return l.Unlock()
			}
		})
	})
}

// runThroughput runs b.N cycles over throughputResources goroutines, the
// r-th running cycleOf(r), and reports cycles/s.
func runThroughput(b *testing.B, cycleOf func(r int) func(i int) error) {
	var next atomic.Int64
	cycles := make([]func(int) error, throughputResources)
	for r := range cycles {
		cycles[r] = cycleOf(r)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, throughputResources)
	for _, cycle := range cycles {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if err := cycle(int(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
}
