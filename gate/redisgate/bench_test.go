// This file measures a fenced write against its two peers on the same
// redis-server, op by op in one run: the plain MULTI/EXEC write of the
// same business command, and the fence a user would write by hand (one
// Lua script that refuses a token below the stored one, then stores the
// token and makes the write). Each iteration does one of each, in an
// order that rotates, so all three see the same load; it reports the
// medians and their ratios. Nothing is asserted.
package redisgate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/testkit/benchpair"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/redistest"
)

// handFence is the hand-rolled fence as a Redis user writes it: KEYS[1]
// holds the highest token seen, KEYS[2] is the business hash; ARGV is the
// token, the field and the value. It answers 0, writing nothing, for a
// token below the stored one. go-redis runs it with EVALSHA (EVAL once,
// to load it).
var handFence = redis.NewScript(`
local seen = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) < seen then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1`)

// receiptedFence is handFence storing one receipt as well, as the gate
// keeps it: KEYS[3] is a receipts hash, ARGV[4] the field (fence:seq),
// ARGV[5] the receipt's JSON (gate.Receipt's form). It is the floor the
// issue sets the gate against: the hand-rolled fence plus one receipt in
// the same atomic step (one EVALSHA, one round trip).
var receiptedFence = redis.NewScript(`
local seen = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) < seen then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[3], ARGV[4], ARGV[5])
return 1`)

// errFenced is the hand-rolled fence's refusal: a newer token was seen.
var errFenced = errors.New("hand-rolled fence: a newer token was seen")

// BenchmarkWritePaired: the plain write is MULTI, HSET, EXEC; the
// hand-rolled fence the script above with the same HSET; the receipt peer
// that script storing one receipt too (receiptedFence); the fenced write
// Apply queuing that HSET. All keys share the resource's hash tag. The
// test kit's redis-server runs with appendfsync always (on /dev/shm).
func BenchmarkWritePaired(b *testing.B) { b.Run("redis", benchWritePaired) }

func benchWritePaired(b *testing.B) {
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
	tag := g.KeysOf(r).Tag
	plainKey, handKey, tokenKey, fencedKey := tag+":plain", tag+":hand", tag+":hand-token", tag+":fenced"
	rcptKey, rcptToken, rcptHash := tag+":receipted", tag+":receipted-token", tag+":receipted-receipts"
	ms := make([]*gate.Mutation, b.N) // made before the clock starts
	for i := range ms {
		m := *base
		m.SegmentSeq, m.PayloadDigest = uint64(i+1), gatetest.Payload(fmt.Sprint(i))
		ms[i] = &m
	}
	benchpair.Run(b,
		benchpair.Lane{Name: "plain", Write: func(i int) error {
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, plainKey, "total", i)
				return nil
			})
			return err
		}},
		benchpair.Lane{Name: "fence", Write: func(i int) error {
			ok, err := handFence.Run(ctx, c, []string{tokenKey, handKey}, int64(base.FenceToken), "total", i).Int()
			if err == nil && ok != 1 {
				err = errFenced
			}
			return err
		}},
		benchpair.Lane{Name: "receipted", Write: func(i int) error {
			m := ms[i]
			r := gate.Receipt{Resource: m.Resource, FenceToken: m.FenceToken, OperationRoot: m.OperationRoot(), OperationID: m.OperationID,
				SegmentSeq: m.SegmentSeq, PayloadDigest: m.PayloadDigest, GrantDigest: m.PayloadDigest,
				AcceptedAt: time.Now().UTC().Truncate(time.Millisecond), Mode: gate.ModeEnforce, Outcome: gate.Accepted}
			ok, err := receiptedFence.Run(ctx, c, []string{rcptToken, rcptKey, rcptHash}, int64(m.FenceToken), "total", i,
				fmt.Sprintf("%d:%d", m.FenceToken, m.SegmentSeq), r.AppendJSON(make([]byte, 0, 512))).Int()
			if err == nil && ok != 1 {
				err = errFenced
			}
			return err
		}},
		benchpair.Lane{Name: "fenced", Write: func(i int) error {
			_, err := g.Apply(ctx, "worker-a", ms[i], func(context.Context) ([]redisgate.Command, error) {
				return []redisgate.Command{{"HSET", fencedKey, "total", i}}, nil
			})
			return err
		}})
}
