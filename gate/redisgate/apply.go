package redisgate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// BusinessFunc makes the protected change: it queues commands on pipe,
// which run in the EXEC that stores the receipt, and may read through tx
// (WATCH, with tx.Watch, any key its writes depend on). Returning an
// error discards the transaction: nothing is written.
type BusinessFunc func(ctx context.Context, tx *redis.Tx, pipe redis.Pipeliner) error

// Apply is applyFencedMutation for a resource kept in Redis; caller is
// the identity the transport authenticated. It returns:
//
//   - ACCEPTED: (new receipt, nil); fn's commands, the new state and the
//     receipt were committed in one EXEC.
//   - REPLAYED: (original receipt, error matching gate.ErrReplayed);
//     nothing was written; gate.IsSuccess(err) is true.
//   - shadow mode, not accepted: (an unstored receipt whose Outcome is the
//     would-be rejection, nil); fn's commands ran with the shadow log.
//   - a rejection: (zero, *gate.Rejection); fn did not run. The pause,
//     quarantine or alarm it records was committed (Rejection.Recorded).
//   - fn failed: (zero, error matching ErrBusiness); nothing was written.
//   - ErrBusinessPartial, ErrReplicationUnconfirmed, ErrContended, or a
//     Redis error: see each; after a connection error the outcome is
//     unknown (query receipts by operation ID).
func (g *Gate) Apply(ctx context.Context, caller string, m *gate.Mutation, fn BusinessFunc) (gate.Receipt, error) {
	v, err := g.pol.Authenticate(m, caller)
	if err != nil {
		g.counters.Add(gate.OutcomeOf(err))
		return gate.Receipt{}, err
	}
	k := g.KeysOf(m.Resource)
	for attempt := range g.retries {
		var d gate.Decision
		err := g.c.Watch(ctx, func(tx *redis.Tx) error {
			var err error
			d, err = g.attempt(ctx, tx, k, v, fn)
			return err
		})
		switch {
		case errors.Is(err, redis.TxFailedErr):
			if err := backoff(ctx, attempt); err != nil {
				return gate.Receipt{}, err
			}
			continue
		case errors.Is(err, ErrBusiness):
			return gate.Receipt{}, err
		case err != nil && !errors.Is(err, ErrBusinessPartial) && !errors.Is(err, ErrReplicationUnconfirmed):
			return gate.Receipt{}, fmt.Errorf("redisgate: apply %s fence %d segment %d (outcome unknown if the EXEC was sent: query receipts by operation ID): %w",
				m.Resource, m.FenceToken, m.SegmentSeq, err)
		}
		g.counters.Add(d.Outcome)
		return g.answer(m, d, err)
	}
	return gate.Receipt{}, fmt.Errorf("%w: %s after %d attempts", ErrContended, m.Resource, g.retries)
}

// attempt reads the state under WATCH, decides, and commits what the
// decision asks for. It returns redis.TxFailedErr when another writer
// changed the state in between.
func (g *Gate) attempt(ctx context.Context, tx *redis.Tx, k Keys, v *gate.Verified, fn BusinessFunc) (gate.Decision, error) {
	m := &v.Mutation
	st, prior, err := g.load(ctx, tx, k, m.Resource, receiptField(m.FenceToken, m.SegmentSeq))
	if err != nil {
		tx.Unwatch(ctx) // the WATCH went through a pipeline: Tx.Close does not know of it
		return gate.Decision{}, err
	}
	now := g.clock.Now()
	d := g.pol.DecideLocked(ctx, g.querying, v, st, prior, now)
	recs := stored.Records(d, v, prior, now.UnixMilli())
	if !d.Proceed && !d.Store && len(recs) == 0 {
		return d, tx.Unwatch(ctx).Err() // nothing to write (a replay, most rejections)
	}
	nBusiness := 0
	cmds, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		if d.Proceed {
			if err := fn(ctx, tx, pipe); err != nil {
				tx.Unwatch(ctx)
				return fmt.Errorf("%w: %w", ErrBusiness, err)
			}
			nBusiness = pipe.Len()
		}
		g.queueDecision(ctx, pipe, k, d, recs)
		return nil
	})
	if err != nil && !errors.Is(err, redis.TxFailedErr) && cmds != nil {
		return d, partial(cmds, nBusiness, err)
	}
	if err == nil && g.replicas > 0 {
		err = g.waitReplicas(ctx, tx)
	}
	return d, err
}

// load reads the state and the receipt at field in one round trip, after
// WATCHing the state key in the same pipeline.
func (g *Gate) load(ctx context.Context, tx *redis.Tx, k Keys, resource, field string) (gate.State, *gate.Receipt, error) {
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
		return gate.State{}, nil, fmt.Errorf("redisgate: watch and read state: %w", errors.Join(watch.Err(), err))
	}
	st, err := g.decodeState(resource, get)
	if err != nil {
		return st, nil, err
	}
	b, err := hget.Bytes()
	if errors.Is(err, redis.Nil) {
		return st, nil, nil
	}
	if err != nil {
		return st, nil, fmt.Errorf("redisgate: read receipt: %w", err)
	}
	var j stored.Receipt
	if err := stored.Decode(b, &j); err != nil {
		return st, nil, err
	}
	r, err := j.GateReceipt()
	return st, &r, err
}

// decodeState turns a GET of the state key into the state; a missing key
// is a resource seen for the first time.
func (g *Gate) decodeState(resource string, get *redis.StringCmd) (gate.State, error) {
	b, err := get.Bytes()
	if errors.Is(err, redis.Nil) {
		return gate.State{Resource: resource, Mode: g.mode}, nil
	}
	if err != nil {
		return gate.State{}, fmt.Errorf("redisgate: read state: %w", err)
	}
	var j stored.State
	if err := stored.Decode(b, &j); err != nil {
		return gate.State{}, err
	}
	st, err := j.GateState()
	if err == nil && st.Resource != resource {
		err = fmt.Errorf("redisgate: state key of %s holds the state of %s", resource, st.Resource)
	}
	return st, err
}

// queueDecision queues the gate's writes for d: the state (an accept or
// a pause), the receipt and its operation index (an accept), the records.
func (g *Gate) queueDecision(ctx context.Context, pipe redis.Pipeliner, k Keys, d gate.Decision, recs []stored.Record) {
	if d.Store {
		pipe.Set(ctx, k.State, stored.Encode(stored.FromState(d.State)), 0)
	}
	if d.Outcome == gate.Accepted {
		r := d.Receipt
		f := receiptField(r.FenceToken, r.SegmentSeq)
		pipe.HSet(ctx, k.Receipts, f, stored.Encode(stored.FromReceipt(r)))
		pipe.RPush(ctx, k.op(r.OperationID), f)
	}
	for _, rec := range recs {
		pipe.RPush(ctx, k.list(rec.Kind), stored.Encode(rec))
	}
}

func (k Keys) list(kind string) string {
	switch kind {
	case stored.RecordAlarm:
		return k.Alarms
	case stored.RecordQuarantine:
		return k.Quarantine
	case stored.RecordShadow:
		return k.Shadow
	}
	return k.Actions
}

// partial classifies an EXEC that ran but reported a failed command: a
// business command (one of the first nBusiness) is ErrBusinessPartial;
// anything else is returned as it is.
func partial(cmds []redis.Cmder, nBusiness int, err error) error {
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

// answer turns a committed decision into Apply's result; execErr is a
// partial EXEC or an unconfirmed replication, reported instead of the
// outcome.
func (g *Gate) answer(m *gate.Mutation, d gate.Decision, execErr error) (gate.Receipt, error) {
	r, err := d.Receipt, d.Err
	switch {
	case d.Outcome == gate.Accepted || d.Outcome == gate.Replayed:
	case d.Proceed:
		r, err = gate.Receipt{Resource: m.Resource, FenceToken: m.FenceToken, OperationID: m.OperationID,
			SegmentSeq: m.SegmentSeq, PayloadDigest: m.PayloadDigest, Mode: gate.ModeShadow, Outcome: d.Outcome}, nil
	default:
		r = gate.Receipt{}
	}
	if execErr != nil {
		return r, execErr
	}
	return r, err
}

// waitReplicas runs WAIT on the connection that ran the EXEC: WAIT
// counts the replicas that acknowledged that connection's last write.
func (g *Gate) waitReplicas(ctx context.Context, tx *redis.Tx) error {
	n, err := tx.Wait(ctx, g.replicas, g.waitFor).Result()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %w", ErrReplicationUnconfirmed, err)
	}
	if int(n) < g.replicas {
		return fmt.Errorf("%w: %d of %d replicas within %s", ErrReplicationUnconfirmed, n, g.replicas, g.waitFor)
	}
	return nil
}

// backoff sleeps a little longer after each lost race, bounded.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(min(attempt, 10)) * 200 * time.Microsecond
	if d == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
