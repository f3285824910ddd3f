// This file holds the differential test's worlds: one key prefix on the
// shared redis-server with its gates, a way to fork one (to try an order
// of concurrent writes on a copy), and the mutations a sequence draws.
package redisgate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/redistest"
)

// diffResource is the one resource a sequence writes.
const diffResource = "diff/one"

// world is one prefix and its gates: several with their own caches (the
// cached world, whose caches go stale behind each other) or one without
// a cache (the WATCH world).
type world struct {
	c      *redis.Client
	prefix string
	gates  []*redisgate.Gate
}

// fataler is testing.TB or *rapid.T.
type fataler interface{ Fatal(args ...any) }

// worldConfig is what the gates of both worlds share.
type worldConfig struct {
	iss   *gatetest.Issuer
	clock *fakeclock.Clock
	mode  gate.Mode
}

func newWorld(tb fataler, c *redis.Client, wc worldConfig, prefix string, gates, cacheMax int, mutate func(*redisgate.Gate)) *world {
	w := &world{c: c, prefix: prefix}
	for range gates {
		g, err := redisgate.New(redisgate.Config{Client: c, Policy: gate.Policy{Verifier: wc.iss.Verifier}, Clock: wc.clock,
			Prefix: prefix, DefaultMode: wc.mode, CachedStatesMax: cacheMax})
		if err != nil {
			tb.Fatal(err)
		}
		if mutate != nil {
			mutate(g)
		}
		w.gates = append(w.gates, g)
	}
	return w
}

func (w *world) effectsKey() string { return w.gates[0].KeysOf(diffResource).Tag + ":effects" }

// apply writes m through gate i with m's payload appended to the effects.
func (w *world) apply(ctx context.Context, i int, m *gate.Mutation, payload string) (gate.Receipt, error) {
	return w.gates[i].Apply(ctx, "worker-a", m, func(context.Context) ([]redisgate.Command, error) {
		return []redisgate.Command{{"RPUSH", w.effectsKey(), payload}}, nil
	})
}

// view is everything a world stores about the resource.
type view struct {
	State   gate.FenceState
	Effects []string
	Records map[string][]redisgate.Record
	Answers []gate.Answer // QueryOperation for each op under each fence
}

func (w *world) view(ctx context.Context) (view, error) {
	g := w.gates[0]
	st, err := g.State(ctx, diffResource)
	if err != nil {
		return view{}, err
	}
	v := view{State: st, Records: map[string][]redisgate.Record{}}
	if v.Effects, err = w.c.LRange(ctx, w.effectsKey(), 0, -1).Result(); err != nil {
		return v, err
	}
	for _, kind := range []string{"alarm", "quarantine", "shadow", "action"} {
		if v.Records[kind], err = g.Records(ctx, kind, diffResource); err != nil {
			return v, err
		}
	}
	for f := uint64(1); f <= diffFences; f++ {
		a, err := g.QueryOperation(ctx, diffResource, opOf(f), f)
		if err != nil {
			return v, err
		}
		v.Answers = append(v.Answers, a)
	}
	return v, nil
}

// fork copies every key of w to a fresh prefix and returns a WATCH world
// on the copy.
func (w *world) fork(ctx context.Context, tb fataler, wc worldConfig) (*world, error) {
	to := redistest.Prefix()
	keys, err := w.c.Keys(ctx, w.prefix+"*").Result()
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		dump, err := w.c.Dump(ctx, k).Result()
		if err != nil {
			return nil, fmt.Errorf("dump %s: %w", k, err)
		}
		if err := w.c.Restore(ctx, to+strings.TrimPrefix(k, w.prefix), 0, dump).Err(); err != nil {
			return nil, fmt.Errorf("restore %s: %w", k, err)
		}
	}
	return newWorld(tb, w.c, wc, to, 1, -1, nil), nil
}

// drop deletes w's keys.
func (w *world) drop(ctx context.Context) {
	if keys, err := w.c.Keys(ctx, w.prefix+"*").Result(); err == nil && len(keys) > 0 {
		w.c.Del(ctx, keys...)
	}
}

// Fences, segments and payloads a sequence draws from.
const (
	diffFences   = 4
	diffSegments = 3
)

func opOf(fence uint64) string { return fmt.Sprintf("op-%d", fence) }

// write is one drawn mutation.
type write struct {
	Gate     int // which gate of the cached world sends it
	Fence    uint64
	Seq      uint64
	Payload  string      // "a" or "b": the same segment with either is a replay or a quarantine
	Status   grant.State // HELD, EXPIRED or RELEASED
	LaterBy  int         // > 0: minted by an issuer this many seconds later (another grant for the fence)
	mutation *gate.Mutation
}

func (w *write) String() string {
	return fmt.Sprintf("gate%d f%d s%d %s %s later%d", w.Gate, w.Fence, w.Seq, w.Payload, w.Status, w.LaterBy)
}

func (w *write) payload() string {
	return fmt.Sprintf("f%d-s%d-%s-l%d", w.Fence, w.Seq, w.Payload, w.LaterBy)
}

func (w *write) mint(iss *gatetest.Issuer) *gate.Mutation {
	if w.mutation == nil {
		is := iss.Later(time.Duration(w.LaterBy) * time.Second)
		wr := gatetest.Writer{Resource: diffResource, Owner: "worker-a", Lease: fmt.Sprintf("lease-%d", w.Fence),
			OperationID: opOf(w.Fence), Fence: w.Fence}
		m := is.Mutation(wr, w.Seq, w.payload())
		if w.Status != grant.StateHeld {
			m = is.WithStatus(m, w.Status)
		}
		w.mutation = m
	}
	return w.mutation
}

// result is what one write returned, as compared across worlds.
type result struct {
	Outcome gate.Outcome
	Receipt string // receipt ID, "" if none
	Err     string // an error that is not an outcome
}

func resultOf(r gate.Receipt, err error) result {
	out := result{Outcome: gate.OutcomeOf(err)}
	if err == nil && r.Outcome != "" {
		out.Outcome = r.Outcome // a shadow-mode pass-through carries the would-be outcome
	}
	if out.Outcome == "" {
		out.Err = err.Error()
	}
	if r != (gate.Receipt{}) {
		out.Receipt = r.ID()
	}
	return out
}

func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			out = append(out, slices.Insert(slices.Clone(p), i, n-1))
		}
	}
	return out
}
