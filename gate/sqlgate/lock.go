package sqlgate

import (
	"context"

	"github.com/fencegate/fencegate/gate"
)

// lockLookup locks the resource's fence row (creating it on first sight)
// and returns its state (Dialect.stateCols) and the receipt for
// (resource, fence, seq), which it reads only when the state says one can
// exist: fence below highestFence, or at it with seq at most
// lastSegmentSeq (receipts are written with the state that covers them
// and never deleted). A new segment, the common case, costs one
// statement. guarded reports whether some table is protected: read under
// the lock that keeps Protect out until commit (SQLite) or with the row
// (PostgreSQL, where a Protect that commits meanwhile can only make the
// guard refuse this write, never admit one), it is exact for this
// transaction, which no per-Gate cache shared with other processes could
// be.
//
// On PostgreSQL the receipt read is a statement of its own, after the row
// lock is held, so its snapshot includes what the transaction we waited
// for committed.
func (g *Gate) lockLookup(ctx context.Context, t txn, m *gate.Mutation) (st gate.FenceState, prior *gate.Receipt, guarded bool, err error) {
	return g.lookupCreating(ctx, t, m, func() (gate.FenceState, bool, error) {
		return g.scanLockLookup(ctx, t, g.stmt.lockLookup, []any{m.Resource})
	})
}

// lookupCreating runs a lockLookup, creating the fence row and running it
// again if the row is missing, and reads the receipt at (resource, fence,
// seq) when the locked state says one can exist.
func (g *Gate) lookupCreating(ctx context.Context, t txn, m *gate.Mutation, lookup func() (gate.FenceState, bool, error)) (gate.FenceState, *gate.Receipt, bool, error) {
	var st gate.FenceState
	guarded := true
	err := g.creatingRow(ctx, t, m.Resource, g.mode, func() (err error) {
		st, guarded, err = lookup()
		return err
	})
	if err != nil {
		return st, nil, true, err
	}
	var prior *gate.Receipt
	if m.FenceToken < st.HighestFence || m.FenceToken == st.HighestFence && m.SegmentSeq <= st.LastSegmentSeq {
		prior, err = g.receiptAt(ctx, t, m.Resource, m.FenceToken, m.SegmentSeq)
	}
	return st, prior, guarded, err
}

// scanLockLookup runs a lockLookup statement q with args and scans it;
// extra receives the columns after the guard probe.
func (g *Gate) scanLockLookup(ctx context.Context, t txn, q string, args []any, extra ...any) (gate.FenceState, bool, error) {
	var sc stateScan
	var guarded bool
	dest := append(sc.dest(), &guarded)
	if err := t.queryRow(ctx, q, args...).Scan(append(dest, extra...)...); err != nil {
		return gate.FenceState{}, true, err
	}
	st, err := sc.state()
	return st, guarded, err
}
