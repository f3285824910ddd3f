package sqlgate

import (
	"context"
	"fmt"
)

// Action is one row of operator_actions: a mode change, a minimum policy
// generation, a resume, a protect.
type Action struct {
	Subject  string // the resource, or the protected table
	Action   string // first word of Detail: set-mode, resume, protect, …
	Operator string // who, as the caller of the action stated it
	Detail   string // what changed, and the operator's note
	AtMs     int64  // gate clock, Unix milliseconds
}

// OperatorActionsMax bounds what OperatorActions returns, 1000 rows.
const OperatorActionsMax = 1000

// OperatorActions returns the last max (at most OperatorActionsMax)
// operator actions on subject, oldest first.
func (g *Gate) OperatorActions(ctx context.Context, q DBTX, subject string, max int) ([]Action, error) {
	if max <= 0 || max > OperatorActionsMax {
		max = OperatorActionsMax
	}
	rows, err := q.QueryContext(ctx, g.q(`SELECT subject, action, operator, detail, at_ms FROM
		(SELECT id, subject, action, operator, detail, at_ms FROM {p}operator_actions WHERE subject = $1 ORDER BY id DESC LIMIT $2) last
		ORDER BY id`), subject, max)
	if err != nil {
		return nil, fmt.Errorf("sqlgate: operator actions: %w", err)
	}
	defer rows.Close()
	var out []Action
	for rows.Next() {
		var a Action
		if err := rows.Scan(&a.Subject, &a.Action, &a.Operator, &a.Detail, &a.AtMs); err != nil {
			return nil, fmt.Errorf("sqlgate: operator actions: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AppliedVersion returns the highest schema version applied to the
// database (0 when the gate's tables do not exist yet). A tool that must
// not migrate (the operator CLI) compares it with SchemaVersion.
func (g *Gate) AppliedVersion(ctx context.Context, q DBTX) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, g.q(`SELECT coalesce(max(version), 0) FROM {p}schema_migrations`)).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("sqlgate: schema version (is this a gate database, with table prefix %q?): %w", g.prefix, err)
	}
	return v, nil
}

// Paused returns how many resources are paused (FENCE_REGRESSION, not yet
// resumed) and, when any is, the time of the oldest one's last
// FENCE_REGRESSION alarm (Unix ms, gate clock; 0 if none is recorded).
func (g *Gate) Paused(ctx context.Context, q DBTX) (n int, oldestAlarmMs int64, err error) {
	err = q.QueryRowContext(ctx, g.q(`SELECT count(*), coalesce(min(a.at), 0) FROM {p}resources r LEFT JOIN
		(SELECT resource, max(raised_at_ms) AS at FROM {p}alarms WHERE kind = 'FENCE_REGRESSION' GROUP BY resource) a
		ON a.resource = r.resource WHERE r.paused <> 0`)).Scan(&n, &oldestAlarmMs)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlgate: paused resources: %w", err)
	}
	return n, oldestAlarmMs, nil
}
