package redisgate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/internal/retry"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// Apply is applyFencedMutation for a resource kept in Redis; caller is
// the identity the transport authenticated. It returns:
//
//   - ACCEPTED: (new receipt, nil); fn's commands, the new state and the
//     receipt were committed in one atomic step.
//   - REPLAYED: (original receipt, error matching gate.ErrReplayed);
//     nothing was written; gate.IsSuccess(err) is true.
//   - shadow mode, not accepted: (an unstored receipt whose Outcome is the
//     would-be rejection, nil); fn's commands ran with the shadow log.
//   - a rejection: (zero, *gate.Rejection); fn did not run. The pause,
//     quarantine or alarm it records was committed (Rejection.Recorded).
//   - the state went back in Redis (wentback.go): (zero, *gate.Rejection
//     FENCE_REGRESSION); the state restored and paused was committed.
//   - fn failed: (zero, error matching ErrBusiness); nothing was written.
//   - an enforced resource on a server that can lose acknowledged writes:
//     (zero, error matching ErrVolatilePersistence); nothing was written.
//   - ErrCommand, ErrBusinessPartial, ErrReplicationUnconfirmed,
//     ErrContended, or a Redis error: see each; after a connection error
//     the outcome is unknown (query receipts by operation ID).
//
// With the resource's state cached, a write above the cached fence and
// segment is one round trip: Go decides on the cached state and the
// compare-and-set script commits only if the stored state is still the
// bytes decided on; if not, the script answers the stored state and
// receipt and Go decides again on them. Otherwise — nothing cached, a
// write at or below the cached fence and segment (which needs the
// stored receipt there), a decision on the cache that writes nothing (a
// rejection only a fresh read may give) — Apply reads under WATCH and
// commits with MULTI/EXEC.
func (g *Gate) Apply(ctx context.Context, caller string, m *gate.Mutation, fn BusinessFunc) (gate.Receipt, error) {
	v, err := g.dec.Policy.Authenticate(m, caller)
	if err != nil {
		g.counters.Add(gate.OutcomeOf(err))
		return gate.Receipt{}, err
	}
	if err := g.checkStore(ctx); err != nil {
		return gate.Receipt{}, fmt.Errorf("redisgate: apply %s: checking the server (nothing was written): %w", m.Resource, err)
	}
	k := g.KeysOf(m.Resource)
	field := receiptField(m.FenceToken, m.SegmentSeq)
	snap, known := g.cache.get(m.Resource)
	for attempt := range g.retries {
		var d gate.Decision
		var err error
		if known && snap.decidable(m) {
			d, snap, known, err = g.cached(ctx, k, field, v, snap, fn)
			if errors.Is(err, errFresh) {
				continue
			}
			if errors.Is(err, errAgain) {
				if err := backoff(ctx, attempt); err != nil {
					return gate.Receipt{}, err
				}
				continue
			}
		} else {
			d, err = g.watched(ctx, k, field, v, fn)
			if errors.Is(err, errCheckStore) {
				if err := g.checkStore(ctx); err != nil {
					return gate.Receipt{}, fmt.Errorf("redisgate: apply %s: checking the server (nothing was written): %w", m.Resource, err)
				}
				continue
			}
			if errors.Is(err, redis.TxFailedErr) {
				if err := backoff(ctx, attempt); err != nil {
					return gate.Receipt{}, err
				}
				continue
			}
		}
		switch {
		case errors.Is(err, ErrBusiness), errors.Is(err, ErrCommand), errors.Is(err, ErrVolatilePersistence):
			return gate.Receipt{}, err
		case err != nil && !errors.Is(err, ErrBusinessPartial) && !errors.Is(err, ErrReplicationUnconfirmed):
			g.cache.forget(m.Resource)
			return gate.Receipt{}, fmt.Errorf("redisgate: apply %s fence %d segment %d (outcome unknown if the commit was sent: query receipts by operation ID): %w",
				m.Resource, m.FenceToken, m.SegmentSeq, err)
		}
		g.counters.Add(d.Outcome)
		return g.answer(m, d, err)
	}
	return gate.Receipt{}, fmt.Errorf("%w: %s after %d attempts", ErrContended, m.Resource, g.retries)
}

// Attempts that committed nothing: errAgain, the compare-and-set lost
// and the next attempt decides on the stored state it answered; errFresh,
// a decision on the cache wrote nothing and the next attempt reads;
// errCheckStore, the read went through a connection the client opened
// since the last store check, which runs before the next attempt.
var (
	errAgain      = errors.New("redisgate: decide again")
	errFresh      = errors.New("redisgate: read before answering")
	errCheckStore = errors.New("redisgate: check the server before deciding")
)

// cached decides on snap — the cached state, or the stored one a lost
// compare-and-set answered — and commits with the script. It returns
// errAgain with the next snapshot to decide on when the stored state was
// not snap's, and errFresh when the decision wrote nothing on a cached
// state: only a fresh read may answer that.
func (g *Gate) cached(ctx context.Context, k Keys, field string, v *gate.Verified, snap snapshot, fn BusinessFunc) (gate.Decision, snapshot, bool, error) {
	m := &v.Mutation
	d, writes, after, err := g.decide(ctx, k, v, snap)
	if err != nil {
		return d, snap, true, err
	}
	if !d.Proceed && len(writes) == 0 {
		if snap.fresh {
			return d, snap, true, nil
		}
		return d, snap, false, errFresh
	}
	var cmds []Command
	if d.Proceed {
		var err error
		if cmds, err = business(ctx, fn); err != nil {
			return d, snap, true, err
		}
	}
	rep, err := g.cas(ctx, k, field, snap, slices.Concat(cmds, writes))
	switch {
	case !rep.ok && err != nil:
		return d, snap, false, err
	case !rep.ok:
		next, err := g.decodeSnapshot(m.Resource, rep.state, rep.receipt)
		if err != nil {
			return d, snap, false, err
		}
		g.cache.put(m.Resource, next.blob, next.st)
		return d, next, true, errAgain
	}
	g.cache.put(m.Resource, after, d.State)
	if rep.failed == 0 {
		return d, snap, true, err // nil, or the commit's replication unconfirmed
	}
	if rep.failed <= len(cmds) {
		return d, snap, true, fmt.Errorf("%w: command %d (%v): %s", ErrBusinessPartial, rep.failed, cmds[rep.failed-1][0], rep.why)
	}
	g.cache.forget(m.Resource)
	return d, snap, true, fmt.Errorf("redisgate: a gate write failed inside the compare-and-set: %s", rep.why)
}

// decide decides m on snap and returns the decision with the gate's
// writes it asks for and the state key's bytes after them. A fresh
// snapshot behind what this Gate saw stored is not decided on: the store
// lost acknowledged writes, and the answer is storeRegression. An
// enforced resource on a server that can lose acknowledged writes is not
// decided on either: the error wraps ErrVolatilePersistence.
func (g *Gate) decide(ctx context.Context, k Keys, v *gate.Verified, snap snapshot) (gate.Decision, []Command, string, error) {
	now := g.clock.Now()
	var d gate.Decision
	why, seen := "", gate.FenceState{}
	if snap.fresh {
		why, seen = g.wentBack(v.Mutation.Resource, snap)
	}
	switch err := g.enforceRefused(); {
	case why != "":
		d = storeRegression(v, snap.st, seen, why)
	case err != nil && snap.st.Mode == gate.ModeEnforce:
		return d, nil, "", fmt.Errorf("%w (resource %s is in enforce mode; Config.AcceptFenceLoss accepts the risk)", err, v.Mutation.Resource)
	default:
		d = g.dec.DecideLocked(ctx, v, snap.st, snap.prior, now)
	}
	if d.Store {
		g.dec.CheckStore(snap.st, d.State)
	}
	writes, after := g.gateWrites(k, snap.blob, d, stored.Records(d, v, snap.prior, now.UnixMilli()))
	return d, writes, after, nil
}

// answer turns a committed decision into Apply's result; execErr is a
// partial commit or an unconfirmed replication, reported instead of the
// outcome.
func (g *Gate) answer(m *gate.Mutation, d gate.Decision, execErr error) (gate.Receipt, error) {
	r, err := adapt.Result(d, m)
	if execErr != nil {
		return r, execErr
	}
	return r, err
}

// waitReplicas runs WAIT on the connection that ran the commit: WAIT
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

// backoffStep is the wait added per a lost WATCH or compare-and-set (retry.Backoff).
const backoffStep = 200 * time.Microsecond

func backoff(ctx context.Context, attempt int) error { return retry.Backoff(ctx, attempt, backoffStep) }
