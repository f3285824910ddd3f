package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// statements are the gate's queries with prefix and placeholders resolved.
type statements struct {
	lockLookup, lockLookupMarking, ensureState, lockState string
	receiptAt, receiptsByOp                               string
	storePause                                            string
	insertQuarantine, insertAlarm                         string
	insertShadow, insertAction                            string
	mark, unmark, finishAccept                            string
}

const stateCols = `resource, mode, highest_fence, root, last_seq, min_policy_generation, paused, paused_reason`
const receiptCols = `resource, fence, operation_root, operation_id, seq, payload_digest, grant_digest, accepted_at_ms, mode, outcome`

func newStatements(g *Gate) statements {
	// lockLookup reads and locks the fence row and, in the same round trip,
	// the grant digest of the last accepted receipt (gate.State.GrantDigest,
	// a key lookup) and the receipt for (resource, fence, seq) if one
	// exists.
	lockLookup := `SELECT r.resource, r.mode, r.highest_fence, r.root, r.last_seq, r.min_policy_generation, r.paused, r.paused_reason,
  (SELECT l.grant_digest FROM {p}receipts l WHERE l.resource = r.resource AND l.fence = r.highest_fence AND l.seq = r.last_seq),
  c.fence, c.operation_root, c.operation_id, c.seq, c.payload_digest, c.grant_digest, c.accepted_at_ms, c.mode, c.outcome%s` + g.d.guardProbe + `
FROM {p}resources r LEFT JOIN {p}receipts c ON c.resource = r.resource AND c.fence = $2 AND c.seq = $3
WHERE r.resource = $1` + g.d.forUpdate
	return statements{
		lockLookup:        g.q(fmt.Sprintf(lockLookup, "")),
		lockLookupMarking: g.q(fmt.Sprintf(lockLookup, g.d.markLocked)),
		lockState:         g.q(`SELECT ` + stateCols + ` FROM {p}resources r WHERE resource = $1` + g.d.forUpdate),
		ensureState:       g.q(`INSERT INTO {p}resources (resource, mode) VALUES ($1, $2) ON CONFLICT (resource) DO NOTHING`),
		receiptAt:         g.q(`SELECT ` + receiptCols + ` FROM {p}receipts WHERE resource = $1 AND fence = $2 AND seq = $3`),
		// The fences come from the partial index of first segments
		// (migration 4); the chain trigger guarantees each fence's later
		// segments are there under the same operation.
		receiptsByOp: g.q(`SELECT ` + receiptCols + ` FROM {p}receipts WHERE resource = $1 AND operation_id = $2 AND fence IN
  (SELECT fence FROM {p}receipts WHERE resource = $1 AND operation_id = $2 AND seq < 2) ORDER BY fence, seq`),
		storePause:       g.q(`UPDATE {p}resources SET paused = $2, paused_reason = $3 WHERE resource = $1`),
		insertQuarantine: g.q(`INSERT INTO {p}quarantine (resource, fence, seq, operation_id, payload_digest, grant_digest, original_receipt, reason, recorded_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`),
		insertAlarm:      g.q(`INSERT INTO {p}alarms (resource, kind, fence, highest_fence, grant_digest, detail, raised_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)`),
		insertShadow:     g.q(`INSERT INTO {p}shadow_log (resource, fence, seq, operation_id, outcome, reason, at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)`),
		insertAction:     g.q(`INSERT INTO {p}operator_actions (subject, action, operator, detail, at_ms) VALUES ($1, $2, $3, $4, $5)`),
		mark:             g.q(g.d.mark),
		unmark:           g.q(g.d.unmark),
		finishAccept:     g.q(g.d.finishAccept),
	}
}

// lockState reads the resource's fence state with its row locked,
// creating the row (in the gate's default mode) on first sight.
func (g *Gate) lockState(ctx context.Context, tx DBTX, resource string) (gate.State, error) {
	return g.lockStateCreating(ctx, tx, resource, g.mode)
}

// lockStateCreating is lockState creating a missing row in mode.
func (g *Gate) lockStateCreating(ctx context.Context, tx DBTX, resource string, mode gate.Mode) (gate.State, error) {
	st, err := g.readState(ctx, tx, g.stmt.lockState, resource)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := tx.ExecContext(ctx, g.stmt.ensureState, resource, string(mode)); err != nil {
			return st, fmt.Errorf("sqlgate: create fence row: %w", err)
		}
		st, err = g.readState(ctx, tx, g.stmt.lockState, resource)
	}
	if err != nil {
		return st, fmt.Errorf("sqlgate: lock fence row: %w", err)
	}
	return st, nil
}

func (g *Gate) readState(ctx context.Context, tx DBTX, query, resource string) (gate.State, error) {
	var st gate.State
	var mode, root string
	var highest, last, minPol int64
	var paused int
	err := tx.QueryRowContext(ctx, query, resource).Scan(&st.Resource, &mode, &highest, &root, &last, &minPol, &paused, &st.PausedReason)
	if err != nil {
		return st, err
	}
	st.Mode, st.HighestFence, st.LastSegmentSeq, st.MinPolicyGeneration, st.Paused = gate.Mode(mode), uint64(highest), uint64(last), uint64(minPol), paused != 0
	if root != "" {
		if st.Root, err = grant.ParseDigest(root); err != nil {
			return st, fmt.Errorf("stored root %q: %v", root, err)
		}
	}
	return st, nil
}

// receiptAt returns the receipt for (resource, fence, seq), or nil.
func (g *Gate) receiptAt(ctx context.Context, tx DBTX, resource string, fence, seq uint64) (*gate.Receipt, error) {
	rs, err := g.scanReceipts(tx.QueryContext(ctx, g.stmt.receiptAt, resource, int64(fence), int64(seq)))
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

func (g *Gate) scanReceipts(rows *sql.Rows, err error) ([]gate.Receipt, error) {
	if err != nil {
		return nil, fmt.Errorf("sqlgate: read receipts: %w", err)
	}
	defer rows.Close()
	var out []gate.Receipt
	for rows.Next() {
		var resource, root, opID, payload, gd, mode, outcome string
		var fence, seq, at int64
		if err := rows.Scan(&resource, &fence, &root, &opID, &seq, &payload, &gd, &at, &mode, &outcome); err != nil {
			return nil, fmt.Errorf("sqlgate: read receipts: %w", err)
		}
		r, err := receiptFrom(resource, fence, root, opID, seq, payload, gd, at, mode, outcome)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// record writes what a decision other than an accept asks for: the pause,
// quarantine, alarm, shadow log (an accept is business.finishAccept's).
func (g *Gate) record(ctx context.Context, tx *sql.Tx, d gate.Decision, v *gate.Verified, prior *gate.Receipt) error {
	m, now := &v.Mutation, g.nowMs()
	var reason string
	if r, ok := d.Err.(*gate.Rejection); ok {
		reason = r.Reason
	}
	var err error
	exec := func(q string, args ...any) {
		if err == nil {
			_, err = g.exec(ctx, tx, q, args...)
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
		exec(g.stmt.insertAlarm, m.Resource, string(d.Outcome), int64(m.FenceToken), int64(d.State.HighestFence), v.GrantDigest.String(), reason, now)
	}
	if d.ShadowLog {
		exec(g.stmt.insertShadow, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), m.OperationID, string(d.Outcome), reason, now)
	}
	if err != nil {
		return fmt.Errorf("sqlgate: record %s: %w", d.Outcome, err)
	}
	return nil
}
