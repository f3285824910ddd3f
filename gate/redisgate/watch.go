package redisgate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// The cold path: a resource this Gate holds no state for (or whose
// cached decision wrote nothing, which only a fresh read may answer) is
// read under WATCH and committed with MULTI/EXEC, which Redis runs only
// if nothing wrote the state key since the read.

// watched is one WATCH attempt: read the state and the receipt at field,
// decide, commit what the decision asks for. It returns redis.TxFailedErr
// when another writer changed the state in between. It leaves the cache
// holding the state it read or wrote.
func (g *Gate) watched(ctx context.Context, k Keys, field string, v *gate.Verified, fn BusinessFunc) (gate.Decision, error) {
	var d gate.Decision
	err := g.c.Watch(ctx, func(tx *redis.Tx) error {
		snap, err := g.load(ctx, tx, k, v.Mutation.Resource, field)
		if err != nil {
			tx.Unwatch(ctx) // the WATCH went through a pipeline: Tx.Close does not know of it
			return err
		}
		if g.storeCheckDue() { // a new connection: the server may have restarted
			tx.Unwatch(ctx)
			return errCheckStore
		}
		var writes []Command
		var after string
		if d, writes, after, err = g.decide(ctx, k, v, snap); err != nil {
			tx.Unwatch(ctx)
			return err
		}
		if !d.Proceed && len(writes) == 0 {
			g.cache.put(v.Mutation.Resource, snap.blob, snap.st)
			return tx.Unwatch(ctx).Err() // nothing to write (a replay, most rejections)
		}
		var cmds []Command
		if d.Proceed {
			if cmds, err = business(ctx, fn); err != nil {
				tx.Unwatch(ctx)
				return err
			}
		}
		all := slices.Concat(cmds, writes)
		res, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, c := range all {
				pipe.Do(ctx, c...)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.TxFailedErr) {
			return g.execFailed(v.Mutation.Resource, res, len(cmds), err)
		}
		if err == nil {
			g.cache.put(v.Mutation.Resource, after, d.State)
			if g.replicas > 0 {
				err = g.waitReplicas(ctx, tx)
			}
		}
		return err
	})
	return d, err
}

// execFailed classifies an EXEC that reported an error: refused whole
// (EXECABORT: a command Redis would not queue; nothing was written) is
// ErrCommand, a business command (one of the first nBusiness) failing
// while EXEC ran is ErrBusinessPartial, anything else is returned as it
// is. The cache forgets the resource: its state is unknown.
func (g *Gate) execFailed(resource string, cmds []redis.Cmder, nBusiness int, err error) error {
	g.cache.forget(resource)
	if strings.HasPrefix(err.Error(), "EXECABORT") {
		return fmt.Errorf("%w: Redis refused the transaction: %w", ErrCommand, err)
	}
	for i, c := range cmds {
		if c.Err() != nil && !errors.Is(c.Err(), redis.Nil) {
			if i < nBusiness {
				return fmt.Errorf("%w: command %d (%s): %w", ErrBusinessPartial, i+1, c.Name(), c.Err())
			}
			return err
		}
	}
	return err
}

// load reads the state and the receipt at field in one round trip, after
// WATCHing the state key in the same pipeline.
func (g *Gate) load(ctx context.Context, tx *redis.Tx, k Keys, resource, field string) (snapshot, error) {
	var watch *redis.Cmd
	var get, hget *redis.StringCmd
	_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
		if watch = p.Do(ctx, "WATCH", k.State); g.noWatch {
			p.Discard()
			watch = p.Do(ctx, "PING")
		}
		get = p.Get(ctx, k.State)
		hget = p.HGet(ctx, k.Receipts, field)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) || watch.Err() != nil {
		return snapshot{}, fmt.Errorf("redisgate: watch and read state: %w", errors.Join(watch.Err(), err))
	}
	if err := get.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return snapshot{}, fmt.Errorf("redisgate: read state: %w", err)
	}
	if err := hget.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return snapshot{}, fmt.Errorf("redisgate: read receipt: %w", err)
	}
	return g.decodeSnapshot(resource, get.Val(), hget.Val())
}

// decodeSnapshot decodes a fresh read of the state key's bytes and the
// receipt field's ("" for absent).
func (g *Gate) decodeSnapshot(resource, blob, receipt string) (snapshot, error) {
	st, err := g.decodeState(resource, blob)
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{blob: blob, st: st, fresh: true}
	if receipt == "" {
		return s, nil
	}
	r, err := gate.DecodeReceipt([]byte(receipt))
	if err != nil {
		return snapshot{}, fmt.Errorf("redisgate: receipt of %s: %v", resource, err) // stored bytes: no gate outcome
	}
	s.prior = &r
	return s, nil
}

// decodeState turns the state key's bytes into the state; "" (no key) is
// a resource seen for the first time.
func (g *Gate) decodeState(resource, blob string) (gate.FenceState, error) {
	if blob == "" {
		return gate.FenceState{Resource: resource, Mode: g.mode}, nil
	}
	var j stored.State
	if err := stored.Decode([]byte(blob), &j); err != nil {
		return gate.FenceState{}, err
	}
	st, err := j.GateState()
	if err == nil && st.Resource != resource {
		err = fmt.Errorf("redisgate: state key of %s holds the state of %s", resource, st.Resource)
	}
	return st, err
}
