package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
)

// lockLookup locks the resource's fence row (creating it on first sight)
// and returns its state (Dialect.stateCols) and the receipt for
// (resource, fence, seq), in one round trip on the common path. With
// marking, the same statement marks the transaction as inside an
// accepting Apply (dialects with markLocked).
// guarded reports whether some table is protected (always true for
// dialects without a guardProbe): read under the lock that keeps Protect
// out until commit, it is exact for this transaction, which no per-Gate
// cache shared with other processes could be.
//
// On PostgreSQL the joined receipt comes from the statement's snapshot,
// which predates a wait for the row lock; a receipt committed by the
// transaction we waited for can be missing from it. Receipts are never
// deleted, so a receipt found is current; a missing one is re-read
// whenever the locked state says the segment could have been accepted.
func (g *Gate) lockLookup(ctx context.Context, tx *sql.Tx, m *gate.Mutation, marking bool) (st gate.State, prior *gate.Receipt, guarded bool, err error) {
	q := g.stmt.lockLookup
	if marking && g.d.markLocked != "" {
		q = g.stmt.lockLookupMarking
	}
	return g.lookupCreating(ctx, tx, m, func() (gate.State, *gate.Receipt, bool, error) {
		return g.scanLockLookup(ctx, tx, q, m, marking && g.d.markLocked != "", nil)
	})
}

// lookupCreating runs a lockLookup, creating the fence row and running it
// again if the row is missing, and re-reads a receipt the statement's
// snapshot may have missed (see lockLookup).
func (g *Gate) lookupCreating(ctx context.Context, tx *sql.Tx, m *gate.Mutation, lookup func() (gate.State, *gate.Receipt, bool, error)) (gate.State, *gate.Receipt, bool, error) {
	st, prior, guarded, err := lookup()
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := g.exec(ctx, tx, g.stmt.ensureState, m.Resource, string(g.mode)); err != nil {
			return st, nil, true, fmt.Errorf("sqlgate: create fence row: %w", err)
		}
		st, prior, guarded, err = lookup()
	}
	if err != nil {
		return st, nil, true, fmt.Errorf("sqlgate: lock fence row: %w", err)
	}
	seen := m.FenceToken < st.HighestFence || m.FenceToken == st.HighestFence && m.SegmentSeq <= st.LastSegmentSeq
	if prior == nil && seen {
		prior, err = g.receiptAt(ctx, tx, m.Resource, m.FenceToken, m.SegmentSeq)
	}
	return st, prior, guarded, err
}

// scanLockLookup runs a lockLookup statement q with args (nil: resource,
// fence, seq) and scans it; extra receives columns after the guard probe.
func (g *Gate) scanLockLookup(ctx context.Context, tx *sql.Tx, q string, m *gate.Mutation, marked bool, args []any, extra ...any) (gate.State, *gate.Receipt, bool, error) {
	var sc stateScan
	var rc nullReceipt
	guarded := true
	dest := append(sc.dest(), &rc.fence, &rc.seq, &rc.opID, &rc.root, &rc.payload, &rc.grant, &rc.at, &rc.mode)
	if marked {
		var a, b sql.NullString
		dest = append(dest, &a, &b)
	}
	if g.d.guardProbe != "" {
		dest = append(dest, &guarded)
	}
	if args == nil {
		args = []any{m.Resource, int64(m.FenceToken), int64(m.SegmentSeq)}
	}
	if err := g.queryRow(ctx, tx, q, args...).Scan(append(dest, extra...)...); err != nil {
		return gate.State{}, nil, true, err
	}
	st, err := sc.state()
	if err != nil || !rc.fence.Valid {
		return st, nil, guarded, err
	}
	r := receiptScan{resource: m.Resource, opID: rc.opID.String, mode: rc.mode.String, fence: rc.fence.Int64, seq: rc.seq.Int64,
		atMs: rc.at.Int64, root: rc.root, payload: rc.payload, grantDigest: rc.grant}
	prior, err := r.receipt()
	return st, &prior, guarded, err
}

// nullReceipt holds the outer-joined receipt columns (NULL when absent;
// a NULL blob scans as nil).
type nullReceipt struct {
	fence, seq, at       sql.NullInt64
	opID, mode           sql.NullString
	root, payload, grant []byte
}
