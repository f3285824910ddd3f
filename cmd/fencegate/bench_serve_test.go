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
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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
	sent    atomic.Int64 // HTTP requests the HTTP client sent
	trace   httptrace.ClientTrace
}

// serveEtcd is where serve's etcd runs in a servePair.
type serveEtcd int

const (
	// embeddedEtcd: serve on its own member, as the quick start runs it
	// (the registry calls it in process), the Mutex's client dialing that
	// member: each side one hop from its client to the process that
	// commits.
	embeddedEtcd serveEtcd = iota
	// externalEtcd: an etcd of its own, serve and the Mutex both its
	// clients: serve's calls take one hop more, HTTP to serve and gRPC on.
	externalEtcd
)

func newServePair(b *testing.B, where serveEtcd) *servePair {
	dir := b.TempDir()
	args := []string{"--data-dir", filepath.Join(dir, "serve"), "--listen", "127.0.0.1:0", "--token-file", benchTokenFile(b, dir), "--authz-open"}
	args = append(args, serveReleaseArgs()...) // the release answered early
	var endpoints []string
	if where == externalEtcd {
		em, err := etcdstore.StartEmbedded(context.Background(), filepath.Join(dir, "etcd"), etcdstore.EmbeddedOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { em.Close() })
		endpoints = em.Endpoints()
		args = append(args, "--etcd-endpoints", strings.Join(endpoints, ","))
	}
	url, stderr := startServeBench(b, args...)
	if where == embeddedEtcd {
		m := embeddedLine.FindStringSubmatch(stderr.String())
		if m == nil {
			// A serve from before it named the endpoint (a base revision
			// in scripts/bench-all.sh, which stops at a failed benchmark).
			b.Skipf("serve names no endpoint of its embedded etcd:\n%s", stderr)
		}
		endpoints = strings.Split(m[1], ",")
	}
	p := &servePair{}
	// The SDK's default HTTP client, with the calls its goroutines make
	// while a request is in flight coalesced into POST /v1/batch.
	c, err := httpclient.NewClient(url, append(serveBatching(), httpclient.WithBearerToken(serveToken))...)
	if err != nil {
		b.Fatal(err)
	}
	ec, err := etcdstore.Dial(context.Background(), etcdstore.ClientConfig{Endpoints: endpoints}, "/bench-mutex/")
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
		p.sent.Add(1)
		if !i.Reused {
			p.dials.Add(1)
		}
	}
	return p
}

// embeddedLine is serve's line naming its embedded member's endpoints.
var embeddedLine = regexp.MustCompile(`embedded etcd in .* \(etcd clients: ([^)]+)\)`)

// startServeBench runs serve in-process with args until the benchmark
// ends and returns its URL and what it wrote to stderr.
func startServeBench(b *testing.B, args ...string) (string, *syncBuffer) {
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), stdout, stderr) }()
	b.Cleanup(func() { cancel(); <-done })
	for range 1200 { // bounded: serve starts in well under a minute
		if m := listenLine.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], stderr
		}
		select {
		case c := <-done:
			done <- c
			b.Fatalf("serve exited %d before listening:\n%s%s", c, stdout, stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	b.Fatalf("serve never printed its listen address:\n%s%s", stdout, stderr)
	return "", nil
}

func benchTokenFile(b *testing.B, dir string) string {
	p := filepath.Join(dir, "tokens")
	if err := os.WriteFile(p, []byte(serveToken+" worker-1\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// httpFloor is two HTTP/1.1 exchanges shaped like a cycle's (bodies of
// the sizes an acquire and a release send and receive, the same
// headers, the SDK's HTTP client) against a server that does nothing but
// read the body and answer: what the HTTP hop costs with no API behind
// it.
type httpFloor struct {
	url string
	c   *http.Client
}

// Body sizes of a cycle's exchanges, as serve sends and answers them.
const (
	floorAcquireBytes, floorIssuedBytes   = 97, 868
	floorReleaseBytes, floorReleasedBytes = 80, 120
)

func newHTTPFloor(b *testing.B) *httpFloor {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	issued, released := bytes.Repeat([]byte("x"), floorIssuedBytes), bytes.Repeat([]byte("x"), floorReleasedBytes)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/v1/acquire" {
			w.Write(issued)
		} else {
			w.Write(released)
		}
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return &httpFloor{url: "http://" + ln.Addr().String(), c: httpclient.NewHTTPClient(nil)}
}

func (f *httpFloor) exchange(ctx context.Context, path string, n int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+path, bytes.NewReader(make([]byte, n)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+serveToken)
	resp, err := f.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func (f *httpFloor) cycle(ctx context.Context) error {
	if err := f.exchange(ctx, "/v1/acquire", floorAcquireBytes); err != nil {
		return err
	}
	return f.exchange(ctx, "/v1/release", floorReleaseBytes)
}

// revision is the etcd server's current revision: every transaction
// that writes, grouped or not, takes exactly one.
func (p *servePair) revision(b *testing.B) int64 {
	r, err := p.session.Client().Get(context.Background(), "/bench-revision-probe")
	if err != nil {
		b.Fatal(err)
	}
	return r.Header.Revision
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
// ratio; and, third, the HTTP floor's two exchanges (httpFloor).
func BenchmarkServeCycle(b *testing.B) { benchServeCycle(b, embeddedEtcd) }

// BenchmarkServeCycleExternalEtcd is BenchmarkServeCycle with serve on
// an etcd of its own, one hop further from its clients than the Mutex.
func BenchmarkServeCycleExternalEtcd(b *testing.B) { benchServeCycle(b, externalEtcd) }

func benchServeCycle(b *testing.B, where serveEtcd) {
	p := newServePair(b, where)
	ctx := context.Background()
	m := concurrency.NewMutex(p.session, "/bench-mutex/cycle")
	floor := newHTTPFloor(b)
	var reg, mut, flo []float64
	for b.Loop() {
		t0 := time.Now()
		if err := p.registryCycle(ctx, "cycle/1"); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		// Untimed: serve reads the resource after the commit of a release
		// it answered early (--release-early), so that commit neither
		// slows the Mutex's cycle nor overlaps the next acquire.
		if _, err := p.http.LockStatus(ctx, "cycle/1"); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := mutexCycle(ctx, m); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := floor.cycle(ctx); err != nil {
			b.Fatal(err)
		}
		reg, mut = append(reg, float64(d.Microseconds())), append(mut, float64(t2.Sub(t1).Microseconds()))
		flo = append(flo, float64(time.Since(t2).Microseconds()))
	}
	b.ReportMetric(medianOf(reg), "serve-us/cycle")
	b.ReportMetric(medianOf(mut), "mutex-us/cycle")
	b.ReportMetric(medianOf(reg)/medianOf(mut), "ratio")
	b.ReportMetric(medianOf(flo), "http-floor-us/cycle")
}

// BenchmarkServeThroughput64 alternates a phase of 640 cycles through
// serve (64 resources, one HTTP client goroutine each) and one of the
// Mutex on 64 keys; one op is one pair of phases. It reports each side's
// median rate, the median of the pairs' ratios and each side's median
// process CPU and heap allocations per cycle (getrusage, MemStats: etcd
// server, serve, both clients).
// A third phase runs the HTTP floor's cycles (httpFloor) on 64
// goroutines: the CPU two bare HTTP/1.1 exchanges take, which serve's
// path pays on top of the registry's.
func BenchmarkServeThroughput64(b *testing.B) { benchServeThroughput64(b, embeddedEtcd) }

// BenchmarkServeThroughput64ExternalEtcd is BenchmarkServeThroughput64
// with serve on an etcd of its own (externalEtcd).
func BenchmarkServeThroughput64ExternalEtcd(b *testing.B) { benchServeThroughput64(b, externalEtcd) }

func benchServeThroughput64(b *testing.B, where serveEtcd) {
	p := newServePair(b, where)
	ctx := context.Background()
	mutexes := p.benchMutexes()
	regPhase := func() (time.Duration, time.Duration) {
		return servePhase(b, func(g int) error { return p.registryCycle(ctx, fmt.Sprint("tp/", g)) })
	}
	mutPhase := func() (time.Duration, time.Duration) {
		return servePhase(b, func(g int) error { return mutexCycle(ctx, mutexes[g]) })
	}
	floor := newHTTPFloor(b)
	floorPhase := func() (time.Duration, time.Duration) {
		return servePhase(b, func(int) error { return floor.cycle(ctx) })
	}
	regPhase()
	mutPhase()
	floorPhase()
	var reg, mut, ratio, regCPU, mutCPU, floRate, floCPU, regAllocs, mutAllocs []float64
	for b.Loop() {
		m0 := mallocs()
		rd, rc := regPhase()
		m1 := mallocs()
		md, mc := mutPhase()
		m2 := mallocs()
		regAllocs, mutAllocs = append(regAllocs, float64(m1-m0)/servePhaseCycles), append(mutAllocs, float64(m2-m1)/servePhaseCycles)
		fd, fc := floorPhase()
		r, m := servePhaseCycles/rd.Seconds(), servePhaseCycles/md.Seconds()
		reg, mut, ratio = append(reg, r), append(mut, m), append(ratio, r/m)
		regCPU, mutCPU = append(regCPU, float64(rc.Microseconds())/servePhaseCycles), append(mutCPU, float64(mc.Microseconds())/servePhaseCycles)
		floRate, floCPU = append(floRate, servePhaseCycles/fd.Seconds()), append(floCPU, float64(fc.Microseconds())/servePhaseCycles)
	}
	b.ReportMetric(medianOf(reg), "serve-cycles/s")
	b.ReportMetric(medianOf(mut), "mutex-cycles/s")
	b.ReportMetric(medianOf(ratio), "ratio")
	b.ReportMetric(medianOf(regCPU), "serve-cpu-us/cycle")
	b.ReportMetric(medianOf(mutCPU), "mutex-cpu-us/cycle")
	b.ReportMetric(medianOf(regAllocs), "serve-allocs/cycle")
	b.ReportMetric(medianOf(mutAllocs), "mutex-allocs/cycle")
	b.ReportMetric(medianOf(floRate), "http-floor-cycles/s")
	b.ReportMetric(medianOf(floCPU), "http-floor-cpu-us/cycle")
}

// BenchmarkServeThroughput64Only runs only serve's side of
// BenchmarkServeThroughput64, one phase per op, so that a CPU profile
// shows serve's path and nothing of the Mutex's. writes/txn is how many
// of the cycles' commits (two a cycle) each etcd transaction carried: the
// store's group commit, reached from HTTP; http-requests/cycle how many
// HTTP requests the SDK sent per cycle (2 without batching).
func BenchmarkServeThroughput64Only(b *testing.B) {
	p := newServePair(b, embeddedEtcd)
	ctx := context.Background()
	phase := func() (time.Duration, time.Duration) {
		return servePhase(b, func(g int) error { return p.registryCycle(ctx, fmt.Sprint("tp/", g)) })
	}
	phase()
	var rate, cpu, allocs, groups, requests []float64
	for b.Loop() {
		m0, r0, s0 := mallocs(), p.revision(b), p.sent.Load()
		d, c := phase()
		allocs = append(allocs, float64(mallocs()-m0)/servePhaseCycles)
		requests = append(requests, float64(p.sent.Load()-s0)/servePhaseCycles)
		groups = append(groups, 2*servePhaseCycles/float64(p.revision(b)-r0)) // each etcd transaction is one revision
		rate, cpu = append(rate, servePhaseCycles/d.Seconds()), append(cpu, float64(c.Microseconds())/servePhaseCycles)
	}
	b.ReportMetric(medianOf(rate), "serve-cycles/s")
	b.ReportMetric(medianOf(cpu), "serve-cpu-us/cycle")
	b.ReportMetric(medianOf(allocs), "serve-allocs/cycle")
	b.ReportMetric(medianOf(groups), "writes/txn")
	b.ReportMetric(medianOf(requests), "http-requests/cycle")
	b.ReportMetric(float64(p.dials.Load())/float64((b.N+1)*servePhaseCycles), "dials/cycle")
}

// benchMutexes are the throughput benchmarks' Mutexes, one per resource,
// on the pair's session.
func (p *servePair) benchMutexes() []*concurrency.Mutex {
	var mutexes []*concurrency.Mutex
	for i := range serveBenchResources {
		mutexes = append(mutexes, concurrency.NewMutex(p.session, fmt.Sprint("/bench-mutex/tp/", i)))
	}
	return mutexes
}

// BenchmarkServeThroughput64MutexOnly runs only the Mutex's side of
// BenchmarkServeThroughput64 (64 Mutexes over an etcd client of serve's
// member), one phase per op: the peer's trace or profile, to set beside
// BenchmarkServeThroughput64Only's (scripts/schedtrace).
func BenchmarkServeThroughput64MutexOnly(b *testing.B) {
	p := newServePair(b, embeddedEtcd)
	ctx := context.Background()
	mutexes := p.benchMutexes()
	phase := func() (time.Duration, time.Duration) {
		return servePhase(b, func(g int) error { return mutexCycle(ctx, mutexes[g]) })
	}
	phase()
	var rate, cpu []float64
	for b.Loop() {
		d, c := phase()
		rate, cpu = append(rate, servePhaseCycles/d.Seconds()), append(cpu, float64(c.Microseconds())/servePhaseCycles)
	}
	b.ReportMetric(medianOf(rate), "mutex-cycles/s")
	b.ReportMetric(medianOf(cpu), "mutex-cpu-us/cycle")
}

// servePhaseCycles is one side's share of a throughput pair.
const servePhaseCycles = 10 * serveBenchResources

// mallocs is how many heap allocations the process made so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

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
