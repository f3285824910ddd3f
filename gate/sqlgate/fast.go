package sqlgate

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
)

// The fast path: a warm Run decides on the state this Gate last saw
// stored for the resource (cache.go) and, where gate.Decide accepts on
// it, stores the accept with one statement (Dialect.fastStore) that
// compares the state's stored columns with the database's and stores
// only where they are equal. That statement is the receipt peer's (the
// hand-rolled fence's UPDATE with its receipt; on SQLite the receipt
// alone, as the state is the last receipt), its condition widened to the
// whole state: no state is read back, and the decision is still
// gate.Decide's, on exactly the state the database holds when the accept
// is stored. Where it stores nothing (the state moved: another writer,
// an operator, a transaction of ours that did not commit), nothing was
// written, and the write goes the read-and-decide way in the same
// transaction. So a cache behind the database costs one statement, never
// a different answer.
//
// It is taken only where the speculation is (speculate.go): in a
// transaction the gate owns (Run, RunPgx), so the receipt can be stored
// before the business change and everything rolled back after; and when
// the mutation's own evidence proves its grant HELD, so the decision asks
// nobody. The decision is made with no querier (it could only be asked
// to settle a lower fence, which is never an accept), and only for a
// mutation above the cached state, where no receipt exists for its
// (fence, segment), so the missing prior is the truth. A stored accept
// then goes through keepSpeculation: a proof that ran out while the
// statement waited for the row lock rolls it back.

// fastAccept decides v at now on the cached state of its resource and, if
// the decision accepts in enforce mode, stores the accept where that state
// is the stored one. stored reports that it did; then d is the decision
// and st the state it was made on. Not stored, nothing was written.
func (g *Gate) fastAccept(ctx context.Context, t txn, v *gate.Verified, now time.Time, ownTx bool) (d gate.Decision, st gate.FenceState, stored bool, err error) {
	m := &v.Mutation
	if !ownTx || g.stmt.fastStore == "" {
		return d, st, false, nil
	}
	snap, ok := g.cache.get(m.Resource)
	if !ok || !above(m, snap.st) || g.d.name == SQLite.name && (snap.guarded || snap.st.HighestFence == 0) {
		return d, st, false, nil
	}
	if ev, own := adapt.OwnEvidence(v); !own || !ev.ProvesHeld(now, g.dec.Policy.StatusSkewMax) {
		return d, st, false, nil
	}
	proofsOnly := g.dec
	proofsOnly.Querier = nil
	d = proofsOnly.DecideLocked(ctx, v, snap.st, nil, now)
	if d.Outcome != gate.Accepted || !d.Store || !d.Proceed || d.Receipt.Mode != gate.ModeEnforce {
		return d, st, false, nil
	}
	r, sc := &d.Receipt, &snap.sc
	n, err := t.execCount(ctx, g.stmt.fastStore, r.Resource, int64(r.FenceToken), int64(r.SegmentSeq), r.OperationID,
		r.OperationRoot[:], r.PayloadDigest[:], r.GrantDigest[:], r.AcceptedAt.UnixMilli(), string(r.Mode), timeMs(d.State.GrantIssuedAt),
		sc.mode, sc.highest, sc.root, sc.last, sc.lastGrant, sc.minPol, sc.paused, sc.reason, sc.grantIssuedMs, sc.floor, sc.floorMs)
	if err != nil {
		return d, st, false, fmt.Errorf("sqlgate: record ACCEPTED: %w", err)
	}
	if n != 1 {
		g.fastMissed.Add(1)
		return d, st, false, nil
	}
	g.fastStored.Add(1)
	return d, snap.st, true, nil
}

// above reports whether m is above st: a fence above highestFence, or
// highestFence with a segment after the last, where no receipt can exist
// yet (receipts are written with the state that reaches them).
func above(m *gate.Mutation, st gate.FenceState) bool {
	return m.FenceToken > st.HighestFence || m.FenceToken == st.HighestFence && m.SegmentSeq > st.LastSegmentSeq
}
