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

// statements are the gate's queries with prefix and placeholders resolved.
type statements struct {
	lockLookup, ensureState, lockState, readState string
	receiptAt, receiptsByOp                       string
	storePause, storeResume                       string
	insertQuarantine, insertAlarm                 string
	insertShadow, insertAction                    string
	mark, finishAccept, finishAcceptUnguarded     string
	speculate, speculateStore                     string
	fastStore                                     string
}

// receiptCols are a receipt's stored columns, in receiptScan's order.
const receiptCols = `resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode`

func newStatements(g *Gate) statements {
	d := g.d
	// lockLookup reads and locks the fence state (Dialect.stateCols). The
	// receipt at (resource, fence, seq) is read only when the state says
	// one can exist (see Gate.lockLookup): most writes are new segments.
	lockLookup := `SELECT ` + d.stateCols + d.guardProbe + `
FROM ` + d.stateFrom + `
WHERE r.resource = $1` + d.forUpdate
	readState := `SELECT ` + d.stateCols + ` FROM ` + d.stateFrom + ` WHERE r.resource = $1`
	s := statements{
		lockLookup:  g.q(lockLookup),
		readState:   g.q(readState),
		lockState:   g.q(readState + d.forUpdate),
		ensureState: g.q(`INSERT INTO {p}resources (resource, mode) VALUES ($1, $2) ON CONFLICT (resource) DO NOTHING`),
		receiptAt:   g.q(`SELECT ` + receiptCols + ` FROM {p}receipts WHERE resource = $1 AND fence = $2 AND seq = $3`),
		// The fences come from the partial index of first segments
		// (migration 4); the gate stores a fence's later segments only
		// after its first, under the same root, which the database
		// enforces too (SQLite: the receipts' chain trigger; PostgreSQL:
		// the fence row's, migration 7).
		receiptsByOp: g.q(`SELECT ` + receiptCols + ` FROM {p}receipts WHERE resource = $1 AND operation_id = $2 AND fence IN
  (SELECT fence FROM {p}receipts WHERE resource = $1 AND operation_id = $2 AND seq < 2) ORDER BY fence, seq`),
		storePause:       g.q(`UPDATE {p}resources SET paused = $2, paused_reason = $3 WHERE resource = $1`),
		storeResume:      g.q(`UPDATE {p}resources SET paused = 0, paused_reason = '', fence_floor = $2, floor_at_ms = $3 WHERE resource = $1`),
		insertQuarantine: g.q(`INSERT INTO {p}quarantine (resource, fence, seq, operation_id, payload_digest, grant_digest, original_receipt, reason, recorded_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`),
		insertAlarm:      g.q(`INSERT INTO {p}alarms (resource, kind, fence, highest_fence, grant_digest, detail, raised_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)`),
		insertShadow:     g.q(`INSERT INTO {p}shadow_log (resource, fence, seq, operation_id, outcome, reason, at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)`),
		insertAction:     g.q(`INSERT INTO {p}operator_actions (subject, action, operator, detail, at_ms) VALUES ($1, $2, $3, $4, $5)`),
		finishAccept:     g.q(d.finishAccept),
	}
	if d.mark != "" {
		s.mark = g.q(d.mark)
	}
	if d.speculate != "" {
		s.speculate = g.q(d.speculate)
	}
	if d.speculateStore != "" {
		s.speculateStore = g.q(d.speculateStore)
	}
	if d.fastStore != "" {
		s.fastStore = g.q(d.fastStore)
	}
	s.finishAcceptUnguarded = s.finishAccept
	if d.finishAcceptUnguarded != "" {
		s.finishAcceptUnguarded = g.q(d.finishAcceptUnguarded)
	}
	return s
}

// lockStateCreating reads the resource's fence state with its row
// locked, creating the row in mode on first sight.
func (g *Gate) lockStateCreating(ctx context.Context, tx *sql.Tx, resource string, mode gate.Mode) (st gate.FenceState, err error) {
	err = g.creatingRow(ctx, sqlTxn{g, tx}, resource, mode, func() (err error) {
		st, err = g.scanState(ctx, tx, g.stmt.lockState, resource)
		return err
	})
	return st, err
}

// creatingRow runs read and, if the resource has no fence row yet,
// creates it in mode and runs read again.
func (g *Gate) creatingRow(ctx context.Context, t txn, resource string, mode gate.Mode, read func() error) error {
	err := read()
	if errors.Is(err, sql.ErrNoRows) {
		if err := t.exec(ctx, g.stmt.ensureState, resource, string(mode)); err != nil {
			return fmt.Errorf("sqlgate: create fence row: %w", err)
		}
		err = read()
	}
	if err != nil {
		return fmt.Errorf("sqlgate: lock fence row: %w", err)
	}
	return nil
}

func (g *Gate) scanState(ctx context.Context, tx DBTX, query, resource string) (gate.FenceState, error) {
	var sc stateScan
	if err := tx.QueryRowContext(ctx, query, resource).Scan(sc.dest()...); err != nil {
		return gate.FenceState{}, err
	}
	return sc.state()
}

// stateScan holds the columns of Dialect.stateCols.
type stateScan struct {
	resource, mode, reason        string
	highest, last, minPol, paused int64
	grantIssuedMs, floor, floorMs int64
	root, lastGrant               []byte
}

func (s *stateScan) dest() []any {
	return []any{&s.resource, &s.mode, &s.highest, &s.root, &s.last, &s.lastGrant, &s.minPol, &s.paused, &s.reason,
		&s.grantIssuedMs, &s.floor, &s.floorMs}
}

func (s *stateScan) state() (gate.FenceState, error) {
	st := gate.FenceState{Resource: s.resource, Mode: gate.Mode(s.mode), HighestFence: uint64(s.highest), LastSegmentSeq: uint64(s.last),
		MinPolicyGeneration: uint64(s.minPol), Paused: s.paused != 0, PausedReason: s.reason,
		GrantIssuedAt: msTime(s.grantIssuedMs), Floor: uint64(s.floor), FloorAt: msTime(s.floorMs)}
	var err error
	if st.Root, err = storedDigest(s.root, true); err != nil {
		return st, fmt.Errorf("sqlgate: stored root: %w", err)
	}
	if st.GrantDigest, err = storedDigest(s.lastGrant, true); err != nil {
		return st, fmt.Errorf("sqlgate: stored last grant: %w", err)
	}
	return st, nil
}

// msTime turns stored Unix milliseconds back into an instant; 0 is
// unknown (the zero time).
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// timeMs is msTime's inverse.
func timeMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// storedDigest turns a stored 32-byte digest back into a grant.Digest;
// with orNone, an empty or NULL value is the zero digest (none yet).
func storedDigest(b []byte, orNone bool) (grant.Digest, error) {
	var d grant.Digest
	if len(b) == 0 && orNone {
		return d, nil
	}
	if len(b) != len(d) {
		return d, fmt.Errorf("%d bytes, want %d", len(b), len(d))
	}
	copy(d[:], b)
	return d, nil
}

// receiptAt returns the receipt for (resource, fence, seq), or nil.
func (g *Gate) receiptAt(ctx context.Context, t txn, resource string, fence, seq uint64) (*gate.Receipt, error) {
	rs, err := g.scanReceipts(t.query(ctx, g.stmt.receiptAt, resource, int64(fence), int64(seq)))
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

func (g *Gate) scanReceipts(rows rowsScanner, err error) ([]gate.Receipt, error) {
	if err != nil {
		return nil, fmt.Errorf("sqlgate: read receipts: %w", err)
	}
	defer rows.Close()
	var out []gate.Receipt
	for rows.Next() {
		var rc receiptScan
		if err := rows.Scan(rc.dest()...); err != nil {
			return nil, fmt.Errorf("sqlgate: read receipts: %w", err)
		}
		r, err := rc.receipt()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// receiptScan holds the columns of receiptCols.
type receiptScan struct {
	resource, opID, mode       string
	fence, seq, atMs           int64
	root, payload, grantDigest []byte
}

func (r *receiptScan) dest() []any {
	return []any{&r.resource, &r.fence, &r.seq, &r.opID, &r.root, &r.payload, &r.grantDigest, &r.atMs, &r.mode}
}

// receipt builds the receipt; the outcome of a stored receipt is always
// ACCEPTED, and its ID is the digest of the rest.
func (r *receiptScan) receipt() (gate.Receipt, error) {
	rc := gate.Receipt{Resource: r.resource, FenceToken: uint64(r.fence), OperationID: r.opID, SegmentSeq: uint64(r.seq),
		AcceptedAt: time.UnixMilli(r.atMs).UTC(), Mode: gate.Mode(r.mode), Outcome: gate.Accepted}
	for _, p := range []struct {
		dst *grant.Digest
		b   []byte
	}{{&rc.OperationRoot, r.root}, {&rc.PayloadDigest, r.payload}, {&rc.GrantDigest, r.grantDigest}} {
		var err error
		if *p.dst, err = storedDigest(p.b, false); err != nil {
			return rc, fmt.Errorf("sqlgate: stored receipt digest: %w", err)
		}
	}
	return rc, nil
}

// record writes what a decision other than an accept asks for: the pause,
// quarantine, alarm, shadow log (an accept is business.finishAccept's).
func (g *Gate) record(ctx context.Context, t txn, d gate.Decision, v *gate.Verified, prior *gate.Receipt) error {
	m, now := &v.Mutation, g.nowMs()
	var reason string
	if r, ok := d.Err.(*gate.Rejection); ok {
		reason = r.Reason
	}
	var err error
	exec := func(q string, args ...any) {
		if err == nil {
			err = t.exec(ctx, q, args...)
		}
	}
	if d.Store && d.Outcome == gate.FenceRegression {
		exec(g.stmt.storePause, m.Resource, 1, d.State.PausedReason)
	}
	if d.Quarantine {
		exec(g.stmt.insertQuarantine, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), m.OperationID,
			m.PayloadDigest.String(), v.GrantDigest.String(), prior.ID(), reason, now)
	}
	if d.Alarm {
		exec(g.stmt.insertAlarm, m.Resource, string(d.AlarmKind), int64(m.FenceToken), int64(d.State.HighestFence), v.GrantDigest.String(), reason, now)
	}
	if d.ShadowLog {
		exec(g.stmt.insertShadow, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), m.OperationID, string(d.Outcome), reason, now)
	}
	if err != nil {
		return fmt.Errorf("sqlgate: record %s: %w", d.Outcome, err)
	}
	return nil
}
