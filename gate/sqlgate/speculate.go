package sqlgate

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
)

// Speculation: on dialects with a speculate statement (PostgreSQL), Run
// locks the fence row and stores the accept in one round trip, before the
// business change, instead of one round trip to lock and read and another
// to store. gate.Decide stays the only judge: the statement stores only
// where the locked state admits an accept (Dialect.speculate), Decide then
// runs on the state that statement locked, and the speculative receipt is
// kept only if Decide accepts it, with the same receipt, and the status
// proof is still fresh once the lock is held. Anything else rolls the
// whole transaction back, which Run can do because it owns it; Apply in a
// caller's transaction never speculates.
//
// A resource whose state does not admit the accept (a replay, a stale
// fence, shadow mode, a pause) costs nothing extra: the statement has
// read and locked everything lockLookup reads, and the decision goes on
// from there. A stored speculation is also the coverage guard's mark on
// PostgreSQL (the receipt, stored before the business change).

// canSpeculate reports whether Run may speculate on v at now: the
// dialect has the statement and the mutation's own evidence (its status
// proof, else its grant's held statement) proves the grant HELD, so that
// the locked state alone settles the decision.
func (g *Gate) canSpeculate(v *gate.Verified, now time.Time, ownTx bool) bool {
	ev, own := adapt.OwnEvidence(v)
	return ownTx && g.stmt.speculate != "" && own && ev.ProvesHeld(now, g.dec.Policy.StatusSkewMax)
}

// speculateLookup is lockLookup through the speculate statement; stored
// reports whether it stored the accept, with receipt time now.
func (g *Gate) speculateLookup(ctx context.Context, t txn, v *gate.Verified, now time.Time) (st gate.FenceState, prior *gate.Receipt, guarded, stored bool, err error) {
	m := &v.Mutation
	args := []any{m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), m.OperationID, v.Root[:], m.PayloadDigest[:],
		v.GrantDigest[:], acceptedAt(now).UnixMilli(), string(gate.ModeEnforce), int64(v.Grant.PolicyGeneration), timeMs(v.Grant.IssuedAt),
		g.dec.Policy.StatusSkewMax.Milliseconds()}
	var n int64
	lookup := func() (gate.FenceState, bool, error) { return g.scanLockLookup(ctx, t, g.stmt.speculate, args, &n) }
	if p, ok := t.(pipeliner); ok && g.stmt.speculateStore != "" {
		// One round trip, two statements: lock and read, then store.
		lookup = func() (gate.FenceState, bool, error) {
			return g.scanLockLookup(ctx, p.then(g.stmt.speculateStore, args, &n), g.stmt.lockLookup, []any{m.Resource})
		}
	}
	st, prior, guarded, err = g.lookupCreating(ctx, t, m, lookup)
	return st, prior, guarded, n == 1, err
}

// pipeliner is a transaction that can send a statement behind a query in
// the same round trip.
type pipeliner interface {
	// then returns a view of the transaction whose queryRow also runs q
	// with args right after the row's statement, and sets affected to its
	// row count once the row is scanned.
	then(q string, args []any, affected *int64) txn
}

// keepSpeculation checks a stored speculative accept against the decision
// d that Decide made on the locked state at the receipt's time now. It
// returns the decision to act on: d when the accept stands; else a
// decision to roll back (a rejection, or an error if the statement and
// Decide disagree, which is a bug in the statement).
func (g *Gate) keepSpeculation(ctx context.Context, v *gate.Verified, st gate.FenceState, prior *gate.Receipt, now time.Time, d gate.Decision) (gate.Decision, error) {
	r, m := d.Receipt, &v.Mutation
	if d.Outcome != gate.Accepted || r.Mode != gate.ModeEnforce || !r.AcceptedAt.Equal(acceptedAt(now)) {
		return d, fmt.Errorf("sqlgate: internal error: the speculative accept of %s fence %d segment %d disagrees with the decision %s (rolled back)",
			m.Resource, m.FenceToken, m.SegmentSeq, d.Outcome)
	}
	// The statement may have waited for the row lock: the proof must
	// still be fresh now that the lock is held, as the unspeculated path
	// judges it. If it is not, decide again at this instant on that
	// evidence alone (no query: a grant's held statement that ran out
	// while the lock was waited for is PROOF_EXPIRED here, where the
	// unspeculated path might have asked the querier; the writer renews).
	later := g.clock.Now()
	if ev, _ := adapt.OwnEvidence(v); !ev.ProvesHeld(later, g.dec.Policy.StatusSkewMax) {
		proofsOnly := g.dec
		proofsOnly.Querier = nil
		d = proofsOnly.DecideLocked(ctx, v, st, prior, later)
		if d.Outcome == gate.Accepted {
			return d, fmt.Errorf("sqlgate: internal error: %s accepted on a stale proof", m.Resource)
		}
		return d, d.Err
	}
	return d, nil
}

// acceptedAt is the receipt time Decide gives an accept at now.
func acceptedAt(now time.Time) time.Time { return now.UTC().Truncate(time.Millisecond) }
