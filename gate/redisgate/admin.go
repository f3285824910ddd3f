package redisgate

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/adapter"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// State returns the resource's stored gate state (zero gate.FenceState with the
// gate's default mode for a resource it never saw). It takes no lock.
func (g *Gate) State(ctx context.Context, resource string) (gate.FenceState, error) {
	blob, err := g.c.Get(ctx, g.KeysOf(resource).State).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return gate.FenceState{}, fmt.Errorf("redisgate: read state: %w", err)
	}
	return g.decodeState(resource, blob)
}

// QueryOperation answers MUTATION_UNKNOWN recovery for an operation
// attempted under fence (gate.Judge states the rule). The state and the
// operation's receipt index are read in one MULTI, so the verdict is
// consistent: receipts are written in the EXEC that raises highestFence
// and never deleted.
func (g *Gate) QueryOperation(ctx context.Context, resource, operationID string, fence uint64) (gate.Answer, error) {
	if err := checkResource(resource); err != nil {
		return gate.Answer{}, err
	}
	k := g.KeysOf(resource)
	var get *redis.StringCmd
	var fields *redis.StringSliceCmd
	_, err := g.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, k.State)
		fields = p.LRange(ctx, k.op(operationID), 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return gate.Answer{}, fmt.Errorf("redisgate: query operation: %w", err)
	}
	st, err := g.decodeState(resource, get.Val())
	if err != nil {
		return gate.Answer{}, err
	}
	rs, err := g.receipts(ctx, k, fields.Val())
	if err != nil {
		return gate.Answer{}, err
	}
	return gate.Judge(rs, st.HighestFence, fence), nil
}

// receipts reads the receipts at fields, ordered by fence then segment.
func (g *Gate) receipts(ctx context.Context, k Keys, fields []string) ([]gate.Receipt, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	vals, err := g.c.HMGet(ctx, k.Receipts, fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("redisgate: read receipts: %w", err)
	}
	out := make([]gate.Receipt, 0, len(vals))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("redisgate: receipt %s indexed but missing", fields[i])
		}
		r, err := gate.DecodeReceipt([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("redisgate: receipt %s: %v", fields[i], err) // stored bytes: no gate outcome
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.FenceToken < b.FenceToken || a.FenceToken == b.FenceToken && a.SegmentSeq < b.SegmentSeq
	})
	return out, nil
}

// SetMode moves a resource to mode (a resource never seen is created in
// it); enforce → anything else is refused with gate.ErrModeDowngrade,
// and enforce on a server that can lose acknowledged writes with
// ErrVolatilePersistence (unless Config.AcceptFenceLoss).
func (g *Gate) SetMode(ctx context.Context, resource string, mode gate.Mode, operator string) error {
	if mode == gate.ModeEnforce {
		if err := g.checkStore(ctx); err != nil {
			return err
		}
		if err := g.enforceRefused(); err != nil {
			return fmt.Errorf("%w (set-mode enforce on %s; Config.AcceptFenceLoss accepts the risk)", err, resource)
		}
	}
	return g.operator(ctx, adapter.SetMode(resource, operator, mode))
}

// SetMinPolicyGeneration raises the lowest grant policy generation the
// resource accepts (it only rises), in the state key, with the action's
// record, in one EXEC.
func (g *Gate) SetMinPolicyGeneration(ctx context.Context, resource string, gen uint64, operator string) error {
	return g.operator(ctx, adapter.RaiseMinPolicy(resource, operator, gen, g.mode))
}

// Resume lifts a FENCE_REGRESSION pause once the operator states a
// registry fence floor above highestFence (gate.Resume). The floor and
// its instant are written to the state key and the action to the
// actions list in one EXEC: both or neither.
func (g *Gate) Resume(ctx context.Context, resource string, registryFloor uint64, operator, note string) error {
	return g.operator(ctx, adapter.Resume(resource, operator, registryFloor, note, g.mode))
}

// operator runs one recorded operator action: read the state under
// WATCH, run the action's step on it, and store it with the action
// record in one EXEC, retrying if a write came in between. A state
// behind what this Gate saw stored is first restored and paused, with an
// alarm, as Apply does (wentback.go), and the action then runs on that.
// The cache keeps the new state; other Gates' caches learn of it at
// their next compare.
func (g *Gate) operator(ctx context.Context, a adapter.Action) error {
	if err := a.Check("redisgate"); err != nil {
		return err
	}
	if err := g.checkStore(ctx); err != nil {
		return err
	}
	resource := a.Resource
	k := g.KeysOf(resource)
	for attempt := range g.retries {
		err := g.c.Watch(ctx, func(tx *redis.Tx) error {
			return g.operatorOnce(ctx, tx, k, a)
		}, k.State)
		if errors.Is(err, errRestored) {
			continue
		}
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: operator action on %s", ErrContended, resource)
}

// errRestored: an operator action found the state gone back and stored
// it restored instead; the action runs on the next attempt.
var errRestored = errors.New("redisgate: state restored")

// operatorOnce is one attempt of operator on the watched state.
func (g *Gate) operatorOnce(ctx context.Context, tx *redis.Tx, k Keys, a adapter.Action) error {
	resource := a.Resource
	blob, err := tx.Get(ctx, k.State).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisgate: read state: %w", err)
	}
	st, err := g.decodeState(resource, blob)
	if err != nil {
		return err
	}
	now := g.clock.Now()
	var next gate.FenceState
	var rec stored.Record
	if why, seen := g.wentBack(resource, snapshot{blob: blob, st: st}); why != "" {
		next = restore(st, seen, why)
		rec = stored.Record{Kind: stored.RecordAlarm, Resource: resource, AlarmKind: string(gate.AlarmRegression),
			Outcome: string(gate.FenceRegression), HighestFence: next.HighestFence, AtMs: now.UnixMilli(),
			Detail: fmt.Sprintf("Redis lost acknowledged writes of %s: %s; highestFence %d kept (found by operator %s)", resource, why, next.HighestFence, a.Operator)}
		err = errRestored
	} else {
		var detail string
		if next, detail, err = a.Step(st, blob != "", now); err != nil {
			return err
		}
		rec = a.Record(detail, now)
	}
	g.dec.CheckStore(st, next)
	nextBlob := stateBlob(next)
	if _, xerr := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k.State, nextBlob, 0)
		p.RPush(ctx, k.list(rec.Kind), stored.Encode(rec))
		return nil
	}); xerr != nil {
		return xerr
	}
	g.cache.put(resource, nextBlob, next)
	return err
}

// Records lists a resource's entries of one kind ("alarm", "quarantine",
// "shadow" or "action"), oldest first.
func (g *Gate) Records(ctx context.Context, kind, resource string) ([]Record, error) {
	k := g.KeysOf(resource)
	key := map[string]string{stored.RecordAlarm: k.Alarms, stored.RecordQuarantine: k.Quarantine,
		stored.RecordShadow: k.Shadow, stored.RecordAction: k.Actions}[kind]
	if key == "" {
		return nil, fmt.Errorf("redisgate: unknown record kind %q", kind)
	}
	vals, err := g.c.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redisgate: records: %w", err)
	}
	out := make([]Record, 0, len(vals))
	for _, v := range vals {
		var r Record
		if err := stored.Decode([]byte(v), &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
