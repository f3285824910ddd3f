// This file measures the whole path a user of `fencegate serve` pays —
// an acquire and a release over HTTP, through serve's registry, onto a
// real etcd server with fsync on — against what a user of etcd's own lock
// pays: concurrency.Mutex over a real etcd client to the same server.
// Both sides alternate in one run; timings are reported, never asserted.
//
//	go test ./cmd/fencegate -run '^$' -bench Serve -benchtime 10x -count 5
//
// BenchmarkServeThroughput64Only runs the serve side alone, for a CPU
// profile of what serve and its client spend:
//
//	go test ./cmd/fencegate -run '^$' -bench ServeThroughput64Only -benchtime 20x -cpuprofile serve.prof
package main

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/registry/etcdstore"
	"github.com/fencegate/fencegate/wire"
)

// serveBenchResources is how many resources the throughput side cycles.
const serveBenchResources = 64

// servePair is one serve on an etcd with fsync on, an HTTP client of it
// and an etcd session on the same etcd.
type servePair struct {
	http    *httpclient.Client
	session *concurrency.Session
	seq     atomic.Int64
	dials   atomic.Int64 // connections the HTTP client opened
	trace   httptrace.ClientTrace
}

func newServePair(b *testing.B) *servePair {
	dir := b.TempDir()
	em, err := etcdstore.StartEmbedded(context.Background(), filepath.Join(dir, "etcd"), etcdstore.EmbeddedOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { em.Close() })
	url := startServeBench(b, "--data-dir", filepath.Join(dir, "serve"), "--listen", "127.0.0.1:0", "--token-file", benchTokenFile(b, dir),
		"--etcd-endpoints", strings.Join(em.Endpoints(), ","), "--authz-open")
	p := &servePair{}
	c, err := httpclient.NewClient(url, httpclient.WithBearerToken(serveToken)) // the SDK's default HTTP client
	if err != nil {
		b.Fatal(err)
	}
	ec, err := em.Client()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ec.Close() })
	sess, err := concurrency.NewSession(ec)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sess.Close() })
	p.http, p.session = c, sess
	p.trace.GotConn = func(i httptrace.GotConnInfo) {
		if !i.Reused {
			p.dials.Add(1)
		}
	}
	return p
}

// startServeBench runs serve in-process with args until the benchmark
// ends and returns its URL.
func startServeBench(b *testing.B, args ...string) string {
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), stdout, stderr) }()
	b.Cleanup(func() { cancel(); <-done })
	for range 1200 { // bounded: serve starts in well under a minute
		if m := listenLine.FindStringSubmatch(stdout.String()); m != nil {
			return m[1]
		}
		select {
		case c := <-done:
			done <- c
			b.Fatalf("serve exited %d before listening:\n%s%s", c, stdout, stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	b.Fatalf("serve never printed its listen address:\n%s%s", stdout, stderr)
	return ""
}

func benchTokenFile(b *testing.B, dir string) string {
	p := filepath.Join(dir, "tokens")
	if err := os.WriteFile(p, []byte(serveToken+" worker-1\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// registryCycle is one acquire and release over HTTP.
func (p *servePair) registryCycle(ctx context.Context, resource string) error {
	ctx = httptrace.WithClientTrace(ctx, &p.trace)
	is, err := p.http.Acquire(ctx, wire.AcquireRequest{Resource: resource, OperationID: "op", OperationClass: "bench",
		RequestID: fmt.Sprint("r", p.seq.Add(1)), TTLMs: 30_000})
	if err != nil {
		return err
	}
	return p.http.Release(ctx, resource, is.Grant.Lease)
}

func mutexCycle(ctx context.Context, m *concurrency.Mutex) error {
	if err := m.Lock(ctx); err != nil {
		return err
	}
	return m.Unlock(ctx)
}

// BenchmarkServeCycle alternates one acquire+release through serve over
// HTTP and one Mutex Lock+Unlock, and reports both medians and their
// ratio.
func BenchmarkServeCycle(b *testing.B) {
	p := newServePair(b)
	ctx := context.Background()
	m := concurrency.NewMutex(p.session, "/bench-mutex/cycle")
	var reg, mut []float64
	for b.Loop() {
		t0 := time.Now()
		if err := p.registryCycle(ctx, "cycle/1"); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := mutexCycle(ctx, m); err != nil {
			b.Fatal(err)
		}
		reg, mut = append(reg, float64(t1.Sub(t0).Microseconds())), append(mut, float64(time.Since(t1).Microseconds()))
	}
	b.ReportMetric(medianOf(reg), "serve-us/cycle")
	b.ReportMetric(medianOf(mut), "mutex-us/cycle")
	b.ReportMetric(medianOf(reg)/medianOf(mut), "ratio")
}

// BenchmarkServeThroughput64 alternates a phase of 640 cycles through
// serve (64 resources, one HTTP client goroutine each) and one of the
// Mutex on 64 keys; one op is one pair of phases. It reports each side's
// median rate, the median of the pairs' ratios and each side's median
// process CPU per cycle (getrusage: etcd server, serve, both clients).
func BenchmarkServeThroughput64(b *testing.B) {
	p := newServePair(b)
	ctx := context.Background()
	var mutexes []*concurrency.Mutex
	for i := range serveBenchResources {
		mutexes = append(mutexes, concurrency.NewMutex(p.session, fmt.Sprint("/bench-mutex/tp/", i)))
	}
	regPhase := func() (time.Duration, time.Duration) {
		return servePhase(b, func(g int) error { return p.registryCycle(ctx, fmt.Sprint("tp/", g)) })
	}
	mutPhase := func() (time.Duration, time.Duration) {
		return servePhase(b, func(g int) error { return mutexCycle(ctx, mutexes[g]) })
	}
	regPhase()
	mutPhase()
	var reg, mut, ratio, regCPU, mutCPU []float64
	for b.Loop() {
		rd, rc := regPhase()
		md, mc := mutPhase()
		r, m := servePhaseCycles/rd.Seconds(), servePhaseCycles/md.Seconds()
		reg, mut, ratio = append(reg, r), append(mut, m), append(ratio, r/m)
		regCPU, mutCPU = append(regCPU, float64(rc.Microseconds())/servePhaseCycles), append(mutCPU, float64(mc.Microseconds())/servePhaseCycles)
	}
	b.ReportMetric(medianOf(reg), "serve-cycles/s")
	b.ReportMetric(medianOf(mut), "mutex-cycles/s")
	b.ReportMetric(medianOf(ratio), "ratio")
	b.ReportMetric(medianOf(regCPU), "serve-cpu-us/cycle")
	b.ReportMetric(medianOf(mutCPU), "mutex-cpu-us/cycle")
}

// BenchmarkServeThroughput64Only runs only serve's side of
// BenchmarkServeThroughput64, one phase per op, so that a CPU profile
// shows serve's path and nothing of the Mutex's.
func BenchmarkServeThroughput64Only(b *testing.B) {
	p := newServePair(b)
	ctx := context.Background()
	phase := func() (time.Duration, time.Duration) {
		return servePhase(b, func(g int) error { return p.registryCycle(ctx, fmt.Sprint("tp/", g)) })
	}
	phase()
	var rate, cpu []float64
	for b.Loop() {
		d, c := phase()
		rate, cpu = append(rate, servePhaseCycles/d.Seconds()), append(cpu, float64(c.Microseconds())/servePhaseCycles)
	}
	b.ReportMetric(medianOf(rate), "serve-cycles/s")
	b.ReportMetric(medianOf(cpu), "serve-cpu-us/cycle")
	b.ReportMetric(float64(p.dials.Load())/float64((b.N+1)*servePhaseCycles), "dials/cycle")
}

// servePhaseCycles is one side's share of a throughput pair.
const servePhaseCycles = 10 * serveBenchResources

// servePhase runs servePhaseCycles cycles, cycle(g) on goroutine g of 64,
// and returns the wall and process CPU time they took.
func servePhase(b *testing.B, cycle func(g int) error) (time.Duration, time.Duration) {
	var (
		left atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, serveBenchResources)
	)
	left.Store(servePhaseCycles)
	t0, cpu0 := time.Now(), processCPU()
	for g := range serveBenchResources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := cycle(g); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	d, cpu := time.Since(t0), processCPU()-cpu0
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return d, cpu
}

// processCPU is the CPU time this process used so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
