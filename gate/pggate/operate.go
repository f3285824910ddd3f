package pggate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// Operated is the gate inside PostgreSQL as gateadmin.RecordingGate, so
// that gateadmin.Store (and with it `fencegate gate status|resume --db`)
// shows a resource's state, alarms and operator actions and resumes it.
// It works as the gate's owner (or a role granted SELECT on the gate's
// tables and EXECUTE on fencegate.resume).
type Operated struct {
	DB *sql.DB // required
}

// State implements gateadmin.RecordingGate (fencegate.state).
func (o Operated) State(ctx context.Context, resource string) (gate.FenceState, error) {
	if o.DB == nil {
		return gate.FenceState{}, errors.New("pggate: Operated.DB is required")
	}
	return State(ctx, o.DB, resource)
}

// Coverage implements gateadmin.CoverageGate (Coverage).
func (o Operated) Coverage(ctx context.Context) (gate.Coverage, error) {
	if o.DB == nil {
		return gate.Coverage{}, errors.New("pggate: Operated.DB is required")
	}
	return Coverage(ctx, o.DB)
}

// GatedWrites implements gateadmin.CoverageGate (GatedWrites).
func (o Operated) GatedWrites(ctx context.Context, resource string) (uint64, error) {
	if o.DB == nil {
		return 0, errors.New("pggate: Operated.DB is required")
	}
	return GatedWrites(ctx, o.DB, resource)
}

// recordQueries select one kind's rows of a resource, oldest first, as
// the columns scanned by Records (the unused ones constant).
var recordQueries = map[string]string{
	stored.RecordAlarm: `SELECT kind, '', fence, 0, highest_fence, '', grant_digest, '', '', '', detail, at_ms
  FROM fencegate.alarms WHERE resource = $1 ORDER BY id`,
	stored.RecordQuarantine: `SELECT '', 'QUARANTINED', fence, seq, 0, operation_id, grant_digest, payload_digest, original_receipt, '', reason, at_ms
  FROM fencegate.quarantine WHERE resource = $1 ORDER BY id`,
	stored.RecordShadow: `SELECT '', outcome, fence, seq, 0, operation_id, '', '', '', '', reason, at_ms
  FROM fencegate.shadow_log WHERE resource = $1 ORDER BY id`,
	stored.RecordAction: `SELECT '', action, 0, 0, 0, '', '', '', '', operator, detail, at_ms
  FROM fencegate.operator_actions WHERE subject = $1 ORDER BY id`,
}

// Records implements gateadmin.RecordingGate: the resource's records of
// kind (stored.RecordAlarm, RecordQuarantine, RecordShadow or
// RecordAction), oldest first; an action's Outcome is its name.
func (o Operated) Records(ctx context.Context, kind, resource string) ([]stored.Record, error) {
	q, ok := recordQueries[kind]
	if !ok {
		return nil, fmt.Errorf("pggate: no record kind %q", kind)
	}
	if o.DB == nil {
		return nil, errors.New("pggate: Operated.DB is required")
	}
	rows, err := o.DB.QueryContext(ctx, q, resource)
	if err != nil {
		return nil, fmt.Errorf("pggate: records: %w", err)
	}
	defer rows.Close()
	var out []stored.Record
	for rows.Next() {
		r := stored.Record{Kind: kind, Resource: resource}
		var fence, seq, highest int64
		if err := rows.Scan(&r.AlarmKind, &r.Outcome, &fence, &seq, &highest, &r.OperationID, &r.GrantDigest,
			&r.PayloadDigest, &r.Original, &r.Operator, &r.Detail, &r.AtMs); err != nil {
			return nil, fmt.Errorf("pggate: records: %w", err)
		}
		r.FenceToken, r.SegmentSeq, r.HighestFence = uint64(fence), uint64(seq), uint64(highest)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pggate: records: %w", err)
	}
	return out, nil
}

// Resume implements gateadmin.RecordingGate with the gate's recorded
// resume (Resume).
func (o Operated) Resume(ctx context.Context, resource string, registryFloor uint64, operator, note string) error {
	if o.DB == nil {
		return errors.New("pggate: Operated.DB is required")
	}
	return Resume(ctx, o.DB, resource, registryFloor, operator, note)
}
