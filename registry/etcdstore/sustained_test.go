// This file proves that a registry at a sustained rate near its full
// throughput does not fill its store: on the embedded member as serve
// runs it (fsync on, its space watch guarding the store, the sweep at
// serve's interval), workers run acquire, renew and release cycles, and
// once the retentions are reached the store's live size — etcd's size
// in use and the number of keys — stays flat: sampled at intervals, the
// last third's median is within sustainedGrowthMax of the first third's.
// The workers keep a steady pace near the member's full rate
// (sustainedRate): the live size follows the rate, and an unpaced rate
// on a shared machine wanders with the other jobs' load. The size per
// cycle of the live window (the cycles finished in the span a request
// entry lives) is logged beside it. The negative control runs the same
// with the sweep off and must grow past that bound.
//
// The retentions are the real settings at values their ranges allow:
// request IDs are kept the default 16 minutes (registry.Config, at least
// 15 minutes plus the skew bound) and the member keeps 1 s of history
// (EmbeddedOptions.CompactionRetention, its least). So that 16 minutes
// pass in seconds, the registry runs on a clock sustainedScale times
// faster than the machine's (fakeclock.Scaled, whose factor is refused
// outside its range): every decision and the sweep's timer run on that
// clock, so an entry's whole life (twice the retention on a busy
// resource, lockstate.EndedEntry) passes in about 4 s.
//
//	go test ./registry/etcdstore -run Sustained -v
//
// A longer run measures for FENCEGATE_SUSTAINED_MEASURE (a Go duration,
// 3s to 24h; the default is sustainedMeasureDefault):
//
//	FENCEGATE_SUSTAINED_MEASURE=10m go test ./registry/etcdstore -run Sustained -v -timeout 30m
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

// Shape of the sustained run.
const (
	// sustainedScale is how many times faster than the machine's the
	// registry clock runs: 16 minutes of request retention in 1.9 s.
	sustainedScale = 500
	// sustainedTTLMs is each lease's TTL by the registry clock, 120 s
	// (0.24 s of the machine's): a cycle renews once and releases.
	sustainedTTLMs = 120_000
	// sustainedWorkers run cycles at once, each on its own
	// sustainedResources resources in turn, together at most
	// sustainedRate cycles/s: near what this 2-core machine's member
	// takes at full rate under the load of other jobs (415 to 2,400
	// unpaced), and steady, so that the live size follows the retention
	// and not the load of the moment.
	sustainedWorkers   = 16
	sustainedResources = 8
	sustainedRate      = 600
	// sustainedCompaction is the member's history, its least.
	sustainedCompaction = EmbeddedCompactionRetentionMin
	// sustainedSampleEvery is the machine's time between samples.
	sustainedSampleEvery = 250 * time.Millisecond
	// sustainedMeasureDefault is how long the measured span lasts after
	// the warm-up; FENCEGATE_SUSTAINED_MEASURE sets it within
	// [sustainedMeasureMin, sustainedMeasureMax].
	sustainedMeasureDefault = 9 * time.Second
	sustainedMeasureMin     = 3 * time.Second
	sustainedMeasureMax     = 24 * time.Hour
	// sustainedGrowthMax bounds the last third's median over the first
	// third's.
	sustainedGrowthMax = 1.25
)

// sustainedSample is one look at the store, at the machine's time since
// the run began; cycles is how many the workers had finished.
type sustainedSample struct {
	at                  time.Duration
	keys, inUse, dbSize int64
	cycles              int64
	// perCycle: keys and in-use bytes over the cycles finished in the
	// live window before the sample.
	keysPerCycle, inUsePerCycle float64
}

// sustainedResult is one run's samples after its warm-up and what the
// workers did in them.
type sustainedResult struct {
	samples  []sustainedSample
	cycles   int64
	expired  int64
	measured time.Duration
}

func sustainedMeasure(t testing.TB) time.Duration {
	v := os.Getenv("FENCEGATE_SUSTAINED_MEASURE")
	if v == "" {
		return sustainedMeasureDefault
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < sustainedMeasureMin || d > sustainedMeasureMax {
		t.Fatalf("FENCEGATE_SUSTAINED_MEASURE=%q: want a duration from %v to %v", v, sustainedMeasureMin, sustainedMeasureMax)
	}
	return d
}

// runSustained runs the cycles on a fresh embedded member for the
// warm-up then measure of the machine's time, sampling the store's live
// size; sweep false leaves the request sweep off.
func runSustained(t testing.TB, sweep bool, measure time.Duration) sustainedResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	em, err := StartEmbedded(ctx, t.TempDir(), EmbeddedOptions{CompactionRetention: sustainedCompaction})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	mc, err := em.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	space, err := NewSpace(mc, SpaceOptions{Recover: true})
	if err != nil {
		t.Fatal(err)
	}
	c, inproc := em.InProcess()
	defer c.Close()
	clk, err := fakeclock.NewScaled(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC), sustainedScale)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "/sustained/"
	reg := storetest.NewRegistry(t, New(c, prefix, inproc).GuardSpace(space), clk)
	cfg := registry.DefaultConfig(1)
	// Live after its grant, by the registry clock: the TTL (the sweep
	// index item sits at the first expiry) and the retention, then, for
	// a lease its busy resource's record no longer names, the retention
	// again from when the sweep wrote its end down
	// (lockstate.EndedEntry), and a sweep interval after each.
	live := (time.Duration(sustainedTTLMs+2*cfg.RequestRetentionMs)*time.Millisecond + 2*registry.SweepIntervalDefault) / sustainedScale
	// The warm-up lets the first entries come due and the member
	// compact twice.
	warm := live + 2*sustainedCompaction
	t.Logf("request retention %v, history %v, registry clock %dx: an entry lives %v of the machine's; warm-up %v, measured %v",
		time.Duration(cfg.RequestRetentionMs)*time.Millisecond, sustainedCompaction, sustainedScale, live, warm, measure)

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); space.Run(ctx, nil) }()
	go func() {
		defer wg.Done()
		if sweep {
			_ = reg.SweepLoop(ctx, registry.SweepIntervalDefault, func(_ int, err error) {
				if err != nil && ctx.Err() == nil {
					t.Errorf("sweep: %v", err)
				}
			})
		}
	}()

	var cycles, expired atomic.Int64
	fail := make(chan error, sustainedWorkers)
	for w := range sustainedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sustainedWorker(ctx, reg, w, &cycles, &expired); err != nil && ctx.Err() == nil {
				fail <- err
				cancel()
			}
		}()
	}

	start := time.Now()
	var all []sustainedSample
	look := func() {
		s := sustainedSample{at: time.Since(start), cycles: cycles.Load()}
		lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
		defer lcancel()
		resp, err := mc.Get(lctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Errorf("count keys: %v", err)
			return
		}
		st, err := mc.Status(lctx, em.Endpoints()[0])
		if err != nil {
			t.Errorf("status: %v", err)
			return
		}
		s.keys, s.inUse, s.dbSize = resp.Count, st.DbSizeInUse, st.DbSize
		// The cycles of the live window: since the last sample at
		// least live before this one.
		var before int64
		for _, p := range all {
			if p.at <= s.at-live {
				before = p.cycles
			}
		}
		if n := float64(s.cycles - before); n > 0 {
			s.keysPerCycle, s.inUsePerCycle = float64(s.keys)/n, float64(s.inUse)/n
		}
		all = append(all, s)
	}
	tick := time.NewTicker(sustainedSampleEvery)
	defer tick.Stop()
	var warmCycles int64
	for time.Since(start) < warm+measure {
		select {
		case <-tick.C:
			if warmCycles == 0 && time.Since(start) >= warm {
				warmCycles = max(cycles.Load(), 1)
			}
			look()
		case err := <-fail:
			t.Fatal(err)
		}
	}
	res := sustainedResult{measured: time.Since(start) - warm, cycles: cycles.Load() - warmCycles, expired: expired.Load()}
	for _, s := range all {
		if s.at >= warm {
			res.samples = append(res.samples, s)
		}
	}
	cancel()
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
	return res
}

// sustainedWorker runs acquire, renew, release on its resources in turn
// until ctx ends. A lease that expired before its renewal or release (a
// cycle slower than the TTL on a loaded machine) is counted, not failed:
// the registry ended it and its entry is swept like any other; so is an
// acquire refused in the lock delay that follows.
func sustainedWorker(ctx context.Context, reg *registry.Registry, w int, cycles, expired *atomic.Int64) error {
	owner := fmt.Sprintf("worker-%d", w)
	every, start := time.Second*sustainedWorkers/sustainedRate, time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * every)); wait > 0 {
			time.Sleep(wait) // ahead of the pace; behind it, no catching up
		}
		resource := fmt.Sprintf("sustained/%d/%d", w, i%sustainedResources)
		is, err := reg.Acquire(ctx, owner, wire.AcquireRequest{Resource: resource, OperationID: "op", OperationClass: "sustained",
			RequestID: fmt.Sprintf("r%d", i), TTLMs: sustainedTTLMs})
		switch {
		case errors.Is(err, wire.ErrBusy):
			continue // the lock delay after an expired lease
		case err != nil:
			return fmt.Errorf("%s acquire %d: %w", owner, i, err)
		}
		lease := is.Grant.Lease
		if _, err := reg.Renew(ctx, owner, resource, lease); errors.Is(err, wire.ErrLeaseExpired) {
			expired.Add(1)
			continue
		} else if err != nil {
			return fmt.Errorf("%s renew %d: %w", owner, i, err)
		}
		if err := reg.Release(ctx, owner, resource, lease); errors.Is(err, wire.ErrLeaseExpired) {
			expired.Add(1)
			continue
		} else if err != nil {
			return fmt.Errorf("%s release %d: %w", owner, i, err)
		}
		cycles.Add(1)
	}
	return nil
}

// thirds returns the medians of f over the first and last thirds.
func thirds(s []sustainedSample, f func(sustainedSample) float64) (first, last float64) {
	n := len(s) / 3
	med := func(part []sustainedSample) float64 {
		v := make([]float64, len(part))
		for i, x := range part {
			v[i] = f(x)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return med(s[:n]), med(s[len(s)-n:])
}

// growth logs the run and returns the last third's median over the
// first's of the keys and the in-use bytes (and logs them per cycle of
// the live window too).
func (r sustainedResult) growth(t testing.TB, name string) (keys, inUse float64) {
	if len(r.samples) < 6 {
		t.Fatalf("%s: %d samples, want at least 6", name, len(r.samples))
	}
	k0, k1 := thirds(r.samples, func(s sustainedSample) float64 { return float64(s.keys) })
	u0, u1 := thirds(r.samples, func(s sustainedSample) float64 { return float64(s.inUse) })
	_, size := thirds(r.samples, func(s sustainedSample) float64 { return float64(s.dbSize) })
	pk0, pk1 := thirds(r.samples, func(s sustainedSample) float64 { return s.keysPerCycle })
	pu0, pu1 := thirds(r.samples, func(s sustainedSample) float64 { return s.inUsePerCycle })
	t.Logf("%s: %.0f cycles/s (%d leases expired), medians of the first and last thirds: keys %.0f -> %.0f (x%.2f), in use %.0f -> %.0f bytes (x%.2f), file %.0f bytes; per cycle of the live window: keys %.2f -> %.2f (x%.2f), in use %.0f -> %.0f bytes (x%.2f)",
		name, float64(r.cycles)/r.measured.Seconds(), r.expired, k0, k1, k1/k0, u0, u1, u1/u0, size, pk0, pk1, pk1/pk0, pu0, pu1, pu1/pu0)
	return k1 / k0, u1 / u0
}

func (r sustainedResult) logSamples(t testing.TB) {
	for _, s := range r.samples {
		t.Logf("%6.2fs keys %d in use %d file %d cycles %d; per cycle of the live window: keys %.2f, in use %.0f", s.at.Seconds(), s.keys, s.inUse, s.dbSize, s.cycles, s.keysPerCycle, s.inUsePerCycle)
	}
}

// TestSustainedCyclesKeepTheStoreFlat: with the sweep on, the live size
// is flat after the retention; with it off (the negative control), the
// same run grows past the bound.
func TestSustainedCyclesKeepTheStoreFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("a sustained run of about 35 s")
	}
	measure := sustainedMeasure(t)
	on := runSustained(t, true, measure)
	keys, inUse := on.growth(t, "sweep on")
	if keys > sustainedGrowthMax || inUse > sustainedGrowthMax {
		on.logSamples(t)
		t.Fatalf("sweep on: the live size grew x%.2f keys, x%.2f in use from the first third to the last, want at most x%.2f", keys, inUse, sustainedGrowthMax)
	}
	off := runSustained(t, false, measure)
	keys, inUse = off.growth(t, "sweep off")
	if keys <= sustainedGrowthMax || inUse <= sustainedGrowthMax {
		off.logSamples(t)
		t.Fatalf("negative control, sweep off: the live size grew only x%.2f keys, x%.2f in use, want past x%.2f: the run does not show what the sweep holds", keys, inUse, sustainedGrowthMax)
	}
}
