package resledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/redisgate"
)

// RedisStore keeps the ledger in Redis behind redisgate (Gate nil:
// lease-only).
type RedisStore struct {
	Client *redis.Client
	Gate   *redisgate.Gate
	Prefix string // starts the values key
}

func (s *RedisStore) valuesKey() string { return s.Prefix + "values" }

// Describe names the store.
func (s *RedisStore) Describe() string {
	if s.Gate == nil {
		return "Redis " + s.Client.Options().Addr + ", LEASE-ONLY (negative control: no gate)"
	}
	return "Redis " + s.Client.Options().Addr + ", fenced (gate/redisgate, cached compare-and-set)"
}

// Write sends one HSET per entry, committed with the gate's writes.
func (s *RedisStore) Write(ctx context.Context, caller string, m *gate.Mutation, entries []ledger.Entry) (gate.Receipt, error) {
	var fence uint64
	if m != nil {
		fence = m.FenceToken
	}
	var cmds []redisgate.Command
	for _, e := range entries {
		b, _ := json.Marshal(ledger.Value{Key: e.Key, Value: e.Value, Writer: caller, Fence: fence})
		cmds = append(cmds, redisgate.Command{"HSET", s.valuesKey(), e.Key, b})
	}
	if s.Gate == nil {
		_, err := s.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range cmds {
				p.Do(ctx, c...)
			}
			return nil
		})
		return gate.Receipt{}, err
	}
	return s.Gate.Apply(ctx, caller, m, func(context.Context) ([]redisgate.Command, error) { return cmds, nil })
}

// QueryOperation is the gate's receipt query.
func (s *RedisStore) QueryOperation(ctx context.Context, resource, op string, fence uint64) (gate.Answer, error) {
	return s.Gate.QueryOperation(ctx, resource, op, fence)
}

// Value reads one field of the values hash.
func (s *RedisStore) Value(ctx context.Context, key string) (ledger.Value, bool, error) {
	b, err := s.Client.HGet(ctx, s.valuesKey(), key).Bytes()
	if errors.Is(err, redis.Nil) {
		return ledger.Value{Key: key}, false, nil
	}
	if err != nil {
		return ledger.Value{}, false, err
	}
	var v ledger.Value
	if err := json.Unmarshal(b, &v); err != nil {
		return v, false, fmt.Errorf("resledger: value %q: %w", key, err)
	}
	return v, true, nil
}
