package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// lockLookup locks the resource's fence row (creating it on first sight)
// and returns its state and the receipt for (resource, fence, seq), in one
// round trip on the common path. With marking, the same statement marks
// the transaction as inside an accepting Apply (dialects with markLocked).
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
	st, prior, guarded, err = g.scanLockLookup(ctx, tx, q, m, marking && g.d.markLocked != "")
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := g.exec(ctx, tx, g.stmt.ensureState, m.Resource, string(g.mode)); err != nil {
			return st, nil, true, fmt.Errorf("sqlgate: create fence row: %w", err)
		}
		st, prior, guarded, err = g.scanLockLookup(ctx, tx, q, m, marking && g.d.markLocked != "")
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

func (g *Gate) scanLockLookup(ctx context.Context, tx *sql.Tx, q string, m *gate.Mutation, marked bool) (gate.State, *gate.Receipt, bool, error) {
	var st gate.State
	var mode, root string
	var highest, last, minPol int64
	var paused int
	var rc nullReceipt
	var lastGrant sql.NullString
	guarded := true
	dest := []any{&st.Resource, &mode, &highest, &root, &last, &minPol, &paused, &st.PausedReason, &lastGrant,
		&rc.fence, &rc.root, &rc.opID, &rc.seq, &rc.payload, &rc.grant, &rc.at, &rc.mode, &rc.outcome}
	if marked {
		var a, b sql.NullString
		dest = append(dest, &a, &b)
	}
	if g.d.guardProbe != "" {
		dest = append(dest, &guarded)
	}
	if err := g.queryRow(ctx, tx, q, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq)).Scan(dest...); err != nil {
		return st, nil, true, err
	}
	st.Mode, st.HighestFence, st.LastSegmentSeq, st.MinPolicyGeneration, st.Paused = gate.Mode(mode), uint64(highest), uint64(last), uint64(minPol), paused != 0
	var err error
	if root != "" {
		if st.Root, err = grant.ParseDigest(root); err != nil {
			return st, nil, guarded, fmt.Errorf("stored root %q: %v", root, err)
		}
	}
	if lastGrant.String != "" {
		if st.GrantDigest, err = grant.ParseDigest(lastGrant.String); err != nil {
			return st, nil, guarded, fmt.Errorf("stored grant digest %q: %v", lastGrant.String, err)
		}
	}
	if !rc.fence.Valid {
		return st, nil, guarded, nil
	}
	r, err := receiptFrom(m.Resource, rc.fence.Int64, rc.root.String, rc.opID.String, rc.seq.Int64, rc.payload.String, rc.grant.String, rc.at.Int64, rc.mode.String, rc.outcome.String)
	return st, &r, guarded, err
}

// nullReceipt holds the outer-joined receipt columns.
type nullReceipt struct {
	fence, seq, at                            sql.NullInt64
	root, opID, payload, grant, mode, outcome sql.NullString
}

// receiptFrom builds a receipt from stored column values.
func receiptFrom(resource string, fence int64, root, opID string, seq int64, payload, gd string, atMs int64, mode, outcome string) (gate.Receipt, error) {
	r := gate.Receipt{Resource: resource, FenceToken: uint64(fence), OperationID: opID, SegmentSeq: uint64(seq),
		AcceptedAt: time.UnixMilli(atMs).UTC(), Mode: gate.Mode(mode), Outcome: gate.Outcome(outcome)}
	for _, p := range []struct {
		dst *grant.Digest
		s   string
	}{{&r.OperationRoot, root}, {&r.PayloadDigest, payload}, {&r.GrantDigest, gd}} {
		var err error
		if *p.dst, err = grant.ParseDigest(p.s); err != nil {
			return r, fmt.Errorf("sqlgate: stored digest %q: %v", p.s, err)
		}
	}
	return r, nil
}
