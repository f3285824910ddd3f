// This file measures a fenced write against the plain MULTI/EXEC write of
// the same business command on the same redis-server, op by op in one
// run (each iteration does one of each), and reports the medians and
// their ratio. Nothing is asserted.
package redisgate_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/redistest"
)

func BenchmarkWritePaired(b *testing.B) {
	ctx := context.Background()
	c := redistest.Client(b)
	iss := gatetest.NewIssuer("bench")
	g, err := redisgate.New(redisgate.Config{Client: c, Policy: gate.Policy{Verifier: iss.Verifier},
		Clock: fakeclock.New(iss.Now.Add(time.Second)), Prefix: redistest.Prefix()})
	if err != nil {
		b.Fatal(err)
	}
	const r = "bench/one"
	base := iss.Mutation(gatetest.Writer{Resource: r, Owner: "worker-a", Lease: "l", OperationID: "op", Fence: 5}, 1, "")
	plainKey, fencedKey := g.KeysOf(r).Tag+":plain", g.KeysOf(r).Tag+":fenced"
	tp, tf := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		m := *base
		m.SegmentSeq, m.PayloadDigest = uint64(i+1), gatetest.Payload(fmt.Sprint(i))
		t0 := time.Now()
		if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, plainKey, "total", i)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := g.Apply(ctx, "worker-a", &m, func(context.Context) ([]redisgate.Command, error) {
			return []redisgate.Command{{"HSET", fencedKey, "total", i}}, nil
		}); err != nil {
			b.Fatal(err)
		}
		tp, tf = append(tp, t1.Sub(t0)), append(tf, time.Since(t1))
	}
	mp, mf := median(tp), median(tf)
	b.ReportMetric(float64(mp.Microseconds()), "plain-µs")
	b.ReportMetric(float64(mf.Microseconds()), "fenced-µs")
	b.ReportMetric(float64(mf)/float64(mp), "fenced/plain")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
