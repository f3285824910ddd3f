// This file proves the cached path decides as the WATCH path does. Over
// random sequences — accepts, next segments, gaps, stale and expired
// writers, replays, quarantines, two grants for one fence (regression and
// pause), shadow mode, operator resumes and enforce — sent through three
// gates whose caches go stale behind each other, one write at a time or
// in concurrent batches, the cached world and a world whose one gate has
// no cache (every write read under WATCH, committed by MULTI/EXEC) reach
// the same outcomes, receipts, states, effects, records and receipt-query
// answers. A concurrent batch must match the WATCH world applying the
// same writes in some order (each tried on a copy of that world). The
// negative control runs the same property against gates whose script
// skips the compare, and it must fail.
package redisgate_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/redistest"
)

func TestCachedMatchesWatch(t *testing.T) {
	c := redistest.Client(t)
	rapid.Check(t, func(rt *rapid.T) { checkCachedMatchesWatch(rt, c, nil) })
}

func TestCachedMatchesWatchFailsWithoutCompare(t *testing.T) {
	c := redistest.Client(t)
	for name, v := range map[string]string{"rapid.nofailfile": "true", "rapid.shrinktime": "2s"} {
		f := flag.Lookup(name)
		old := f.Value.String()
		if err := f.Value.Set(v); err != nil {
			t.Fatal(err)
		}
		defer f.Value.Set(old)
	}
	rec := &rapidRecorder{name: t.Name()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rapid.Check(rec, func(rt *rapid.T) { checkCachedMatchesWatch(rt, c, redisgate.WithoutCompare) })
	}()
	<-done
	if !rec.Failed() {
		t.Fatal("with the compare skipped the cached world still matched: the property cannot see a stale cache")
	}
	t.Logf("without the compare: %.300s", rec.first)
}

// step is one move of a sequence.
type step struct {
	writes  []*write // one: alone; more: a concurrent batch, one per gate
	resume  int      // > 0: Resume with the floor highestFence+resume-1 (1: refused)
	enforce bool     // SetMode(enforce)
}

// cursor is the writer a sequence follows: half of the writes are its
// next segment or the next fence's first, so that accepts are common.
type cursor struct{ fence, seq uint64 }

func drawWrite(rt *rapid.T, label string, gateIdx int, cur *cursor) *write {
	w := &write{Gate: gateIdx, Fence: rapid.Uint64Range(1, diffFences).Draw(rt, label+"fence"),
		Seq: rapid.Uint64Range(1, diffSegments).Draw(rt, label+"seq"), Payload: rapid.SampledFrom([]string{"a", "b"}).Draw(rt, label+"payload"),
		Status: grant.StateHeld}
	switch rapid.IntRange(0, 19).Draw(rt, label+"kind") {
	case 0, 1:
		w.Status = rapid.SampledFrom([]grant.State{grant.StateExpired, grant.StateReleased}).Draw(rt, label+"status")
	case 2:
		w.LaterBy = rapid.IntRange(1, 2).Draw(rt, label+"later")
	case 3, 4, 5, 6, 7, 8, 9, 10, 11, 12:
		if cur.seq < diffSegments && (cur.fence == diffFences || rapid.Bool().Draw(rt, label+"same")) {
			cur.seq++
		} else if cur.fence < diffFences {
			cur.fence, cur.seq = cur.fence+1, 1
		}
		w.Fence, w.Seq, w.Payload = max(cur.fence, 1), max(cur.seq, 1), "a"
	}
	return w
}

func drawStep(rt *rapid.T, i int, cur *cursor) step {
	l := fmt.Sprintf("step%d-", i)
	switch k := rapid.IntRange(0, 19).Draw(rt, l+"kind"); {
	case k <= 1:
		return step{resume: rapid.IntRange(1, 2).Draw(rt, l+"floor")}
	case k == 2:
		return step{enforce: true}
	case k <= 6:
		n := rapid.IntRange(2, 3).Draw(rt, l+"batch")
		var s step
		for j := range n {
			s.writes = append(s.writes, drawWrite(rt, fmt.Sprintf("%sw%d-", l, j), j, cur))
		}
		return s
	}
	return step{writes: []*write{drawWrite(rt, l, rapid.IntRange(0, 2).Draw(rt, l+"gate"), cur)}}
}

func checkCachedMatchesWatch(rt *rapid.T, c *redis.Client, mutate func(*redisgate.Gate)) {
	ctx := context.Background()
	iss := gatetest.NewIssuer("diff")
	wc := worldConfig{iss: iss, clock: fakeclock.New(iss.Now.Add(time.Second)),
		mode: rapid.SampledFrom([]gate.Mode{gate.ModeEnforce, gate.ModeShadow}).Draw(rt, "mode")}
	cached := newWorld(rt, c, wc, redistest.Prefix(), 3, 0, mutate)
	ref := newWorld(rt, c, wc, redistest.Prefix(), 1, -1, nil)
	defer func() { cached.drop(ctx); ref.drop(ctx) }()
	cur := &cursor{}
	for i := range rapid.IntRange(1, 40).Draw(rt, "steps") {
		s := drawStep(rt, i, cur)
		switch {
		case s.resume > 0:
			st, err := ref.gates[0].State(ctx, diffResource)
			if err != nil {
				rt.Fatal(err)
			}
			floor := st.HighestFence + uint64(s.resume) - 1
			sameErr(rt, i, "resume", cached.gates[i%3].Resume(ctx, diffResource, floor, "ops", "diff"),
				ref.gates[0].Resume(ctx, diffResource, floor, "ops", "diff"))
		case s.enforce:
			sameErr(rt, i, "enforce", cached.gates[i%3].SetMode(ctx, diffResource, gate.ModeEnforce, "ops"),
				ref.gates[0].SetMode(ctx, diffResource, gate.ModeEnforce, "ops"))
		case len(s.writes) == 1:
			w := s.writes[0]
			m := w.mint(iss)
			got, want := resultOf(cached.apply(ctx, w.Gate, m, w.payload())), resultOf(ref.apply(ctx, 0, m, w.payload()))
			if got != want {
				rt.Fatalf("step %d (%s): cached %+v, WATCH %+v", i, w, got, want)
			}
		default:
			ref = linearize(ctx, rt, i, wc, cached, ref, s.writes)
		}
		sameView(ctx, rt, i, cached, ref)
	}
}

// linearize runs the batch concurrently on the cached world and returns
// a copy of ref on which the same writes, applied one by one in some
// order, gave the same results and the same view.
func linearize(ctx context.Context, rt *rapid.T, i int, wc worldConfig, cached, ref *world, batch []*write) *world {
	got := make([]result, len(batch))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for j, w := range batch {
		m := w.mint(wc.iss)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[j] = resultOf(cached.apply(ctx, w.Gate, m, w.payload()))
		}()
	}
	close(start)
	wg.Wait()
	cv, err := cached.view(ctx)
	if err != nil {
		rt.Fatal(err)
	}
	for _, order := range permutations(len(batch)) {
		f, err := ref.fork(ctx, rt, wc)
		if err != nil {
			rt.Fatal(err)
		}
		ok := true
		for _, j := range order {
			if resultOf(f.apply(ctx, 0, batch[j].mint(wc.iss), batch[j].payload())) != got[j] {
				ok = false
			}
		}
		if fv, err := f.view(ctx); err != nil || !ok || !reflect.DeepEqual(fv, cv) {
			f.drop(ctx)
			continue
		}
		ref.drop(ctx)
		return f
	}
	rt.Fatalf("step %d: batch %v gave %+v in the cached world, which no order of it gives in the WATCH world", i, batch, got)
	return nil
}

func sameErr(rt *rapid.T, i int, what string, cached, ref error) {
	if (cached == nil) != (ref == nil) || errors.Is(cached, gate.ErrResumeRefused) != errors.Is(ref, gate.ErrResumeRefused) ||
		errors.Is(cached, gate.ErrModeDowngrade) != errors.Is(ref, gate.ErrModeDowngrade) {
		rt.Fatalf("step %d %s: cached %v, WATCH %v", i, what, cached, ref)
	}
}

func sameView(ctx context.Context, rt *rapid.T, i int, cached, ref *world) {
	cv, err1 := cached.view(ctx)
	rv, err2 := ref.view(ctx)
	if err := errors.Join(err1, err2); err != nil {
		rt.Fatal(err)
	}
	if !reflect.DeepEqual(cv, rv) {
		rt.Fatalf("step %d: the worlds differ:\ncached %+v\n WATCH %+v", i, cv, rv)
	}
}

// rapidRecorder is a rapid.TB that remembers failures; Fatal ends the
// goroutine as testing.T's does.
type rapidRecorder struct {
	name   string
	mu     sync.Mutex
	failed bool
	first  string
}

func (r *rapidRecorder) Helper()             {}
func (r *rapidRecorder) Name() string        { return r.name }
func (r *rapidRecorder) Logf(string, ...any) {}
func (r *rapidRecorder) Log(...any)          {}
func (r *rapidRecorder) Skipf(f string, a ...any) {
	r.Fatalf("skipped: "+f, a...)
}
func (r *rapidRecorder) Skip(a ...any) { r.Fatal(a...) }
func (r *rapidRecorder) SkipNow()      { r.FailNow() }
func (r *rapidRecorder) Errorf(f string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failed {
		r.first = fmt.Sprintf(f, a...)
	}
	r.failed = true
}
func (r *rapidRecorder) Error(a ...any)            { r.Errorf("%s", fmt.Sprint(a...)) }
func (r *rapidRecorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); runtime.Goexit() }
func (r *rapidRecorder) Fatal(a ...any)            { r.Error(a...); runtime.Goexit() }
func (r *rapidRecorder) FailNow()                  { r.Fatal("FailNow") }
func (r *rapidRecorder) Fail()                     { r.Error("Fail") }
func (r *rapidRecorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
