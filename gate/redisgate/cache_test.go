// This file proves the cached path's own properties: a gate whose cache
// another gate wrote behind never accepts on it (and, with the script's
// compare removed, does — the negative control, also failing the shared
// ConcurrentWriters case); a warm write is one round trip; the cache is
// bounded; the script holds no gate rule; a malformed business command
// writes nothing.
package redisgate_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/redistest"
)

func TestStaleCacheNeverAccepts(t *testing.T) {
	if why := staleCache(t, nil); why != "" {
		t.Fatal(why)
	}
}

func TestStaleCacheAcceptsWithoutCompare(t *testing.T) {
	why := staleCache(t, redisgate.WithoutCompare)
	if why == "" {
		t.Fatal("with the compare skipped the stale cache still did not accept: the test cannot see a stale cache")
	}
	t.Logf("without the compare: %s", why)
}

// staleCache lets gate b write behind gate a's cache, then sends a a
// write its cache would accept; it returns what went wrong, "" if
// nothing did.
func staleCache(t *testing.T, mutate func(*redisgate.Gate)) string {
	ctx := context.Background()
	c := redistest.Client(t)
	a, iss := newGate(t, c, redisgate.Config{})
	b, err := redisgate.New(redisgate.Config{Client: c, Policy: gate.Policy{Verifier: iss.Verifier}, Prefix: a.KeysOf("x").Tag[:strings.Index(a.KeysOf("x").Tag, "{")],
		Clock: fakeclock.New(iss.Now.Add(1e9))})
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(a)
	}
	const r = "redis/stale-cache"
	fx := a.KeysOf(r).Tag + ":effects"
	write := func(g *redisgate.Gate, fence, seq uint64, op string) error {
		p := fmt.Sprintf("%s-%d", op, seq)
		w := writer(r, fence)
		w.OperationID, w.Lease = op, op
		_, err := g.Apply(ctx, "worker-a", iss.Mutation(w, seq, p), func(context.Context) ([]redisgate.Command, error) {
			return []redisgate.Command{{"RPUSH", fx, p}}, nil
		})
		return err
	}
	if err := write(a, 5, 1, "op-a"); err != nil { // a's cache: fence 5, segment 1
		t.Fatal(err)
	}
	if err := write(b, 6, 1, "op-b"); err != nil { // behind a's back
		t.Fatal(err)
	}
	err = write(a, 5, 2, "op-a") // a's cache says: the next segment, accept
	if got := gate.OutcomeOf(err); got != gate.StaleOwner {
		return fmt.Sprintf("fence 5 segment 2 on a stale cache: %s (%v), want STALE_OWNER", got, err)
	}
	if got, _ := c.LRange(ctx, fx, 0, -1).Result(); !slices.Equal(got, []string{"op-a-1", "op-b-1"}) {
		return fmt.Sprintf("effects %q", got)
	}
	// a learnt the stored state from the failed compare: fence 6 goes on.
	if err := write(a, 6, 2, "op-b"); err != nil {
		return fmt.Sprintf("fence 6 segment 2 after the refresh: %v", err)
	}
	if st, err := b.State(ctx, r); err != nil || st.HighestFence != 6 || st.LastSegmentSeq != 2 {
		return fmt.Sprintf("state %+v %v", st, err)
	}
	return ""
}

func TestWithoutCompareConcurrentWritersFail(t *testing.T) {
	mutant := func(t testing.TB, cfg conformance.Config) conformance.Harness {
		h := newHarness(t, cfg).(*harness)
		redisgate.WithoutCompare(h.g)
		return h
	}
	why := conformance.Fails(t, mutant, "ConcurrentWriters")
	if why == "" {
		t.Fatal("without the compare the concurrent writers still passed: the case cannot see a lost race")
	}
	t.Logf("without the compare: %s", why)
}

// roundTrips counts what a client sends: one per command or pipeline.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

func TestWarmWriteIsOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	rt := &roundTrips{}
	c.AddHook(rt)
	g, iss := newGate(t, c, redisgate.Config{})
	fn := func(context.Context) ([]redisgate.Command, error) {
		return []redisgate.Command{{"HSET", g.KeysOf("redis/warm").Tag + ":v", "n", 1}}, nil
	}
	for seq := uint64(1); seq <= 3; seq++ {
		before := rt.n.Load()
		if _, err := g.Apply(ctx, "worker-a", iss.Mutation(writer("redis/warm", 1), seq, fmt.Sprint(seq)), fn); err != nil {
			t.Fatal(err)
		}
		n := rt.n.Load() - before
		t.Logf("segment %d: %d round trips", seq, n)
		if seq > 1 && n != 1 {
			t.Fatalf("a warm write took %d round trips, want 1", n)
		}
	}
}

func TestCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	g, iss := newGate(t, redistest.Client(t), redisgate.Config{CachedStatesMax: 2})
	for i := range 5 {
		r := fmt.Sprintf("redis/bounded-%d", i)
		if _, err := g.Apply(ctx, "worker-a", iss.Mutation(writer(r, 1), 1, "p"), func(context.Context) ([]redisgate.Command, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := redisgate.CachedStates(g); n != 2 {
		t.Fatalf("%d states cached, want 2", n)
	}
}

func TestScriptHasNoRule(t *testing.T) {
	src := strings.ToLower(redisgate.ScriptSource)
	for _, w := range []string{"fence", "segment", "seq", "receipt", "mode", "paus", "enforce", "shadow", "accept", "reject", "stale", "regress", "floor", "policy"} {
		if strings.Contains(src, w) {
			t.Errorf("the script mentions %q: a rule in Lua?", w)
		}
	}
	// Its only comparisons: the state with the expected bytes, and the
	// loop over the commands and their errors.
	cmp := regexp.MustCompile(`[^\s]+\s*(==|~=|<=|>=|<|>)\s*[^\s]+`).FindAllString(redisgate.ScriptSource, -1)
	want := []string{"st ~= ARGV[1]", "i <= #ARGV", "failed == 0", "type(r) == 'table'"}
	if !slices.Equal(cmp, want) {
		t.Fatalf("comparisons %q, want %q", cmp, want)
	}
}

func TestMalformedCommandWritesNothing(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	g, iss := newGate(t, c, redisgate.Config{})
	const r = "redis/malformed"
	for i, cmds := range [][]redisgate.Command{{{}}, {{42, "x"}}, {{"SET", "k", []string{"a"}}}} {
		_, err := g.Apply(ctx, "worker-a", iss.Mutation(writer(r, 1), 1, "p"), func(context.Context) ([]redisgate.Command, error) { return cmds, nil })
		if !errors.Is(err, redisgate.ErrCommand) {
			t.Fatalf("case %d: %v", i, err)
		}
	}
	if n, err := c.Exists(ctx, g.KeysOf(r).State).Result(); err != nil || n != 0 {
		t.Fatalf("state written: %d %v", n, err)
	}
}
