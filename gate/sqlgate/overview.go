package sqlgate

import (
	"context"
	"fmt"
)

// The reads below serve a gate's overview (gate/report): a few set-based
// queries per report, whatever the number of resources, none of which
// locks anything. Run them on a read-only connection (OpenSQLiteReader)
// or a pool, never inside an Apply.

// OverviewRowsMax bounds what one overview read returns, 1000 rows.
const OverviewRowsMax = 1000

// ResourceNames returns up to limit (at most OverviewRowsMax) resources
// the gate has a row for, paused ones first, then by name, and how many
// rows there are in all.
func (g *Gate) ResourceNames(ctx context.Context, q DBTX, limit int) ([]string, int, error) {
	limit = boundRows(limit)
	var total int
	if err := q.QueryRowContext(ctx, g.q(`SELECT count(*) FROM {p}resources`)).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("sqlgate: resource names: %w", err)
	}
	rows, err := q.QueryContext(ctx, g.q(`SELECT resource FROM {p}resources ORDER BY paused DESC, resource LIMIT $1`), limit)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlgate: resource names: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, 0, fmt.Errorf("sqlgate: resource names: %w", err)
		}
		out = append(out, r)
	}
	return out, total, rows.Err()
}

// RecordSummary counts the rows of one kind ("quarantine" or "alarms")
// per resource, and returns the last n (at most OverviewRowsMax) rows of
// that kind over all resources, oldest first.
func (g *Gate) RecordSummary(ctx context.Context, q DBTX, kind string, n int) (map[string]int, []Record, error) {
	cols := map[string]string{
		"quarantine": "resource, fence, 'QUARANTINED', reason, recorded_at_ms",
		"alarms":     "resource, fence, kind, detail, raised_at_ms",
	}[kind]
	if cols == "" {
		return nil, nil, fmt.Errorf("sqlgate: record summary: unknown kind %q", kind)
	}
	counts := map[string]int{}
	rows, err := q.QueryContext(ctx, g.q(`SELECT resource, count(*) FROM {p}`+kind+` GROUP BY resource`))
	if err != nil {
		return nil, nil, fmt.Errorf("sqlgate: record summary: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r string
		var c int
		if err := rows.Scan(&r, &c); err != nil {
			return nil, nil, fmt.Errorf("sqlgate: record summary: %w", err)
		}
		counts[r] = c
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("sqlgate: record summary: %w", err)
	}
	last, err := g.lastRecords(ctx, q, kind, cols, boundRows(n))
	return counts, last, err
}

func (g *Gate) lastRecords(ctx context.Context, q DBTX, kind, cols string, n int) ([]Record, error) {
	rows, err := q.QueryContext(ctx, g.q(`SELECT `+cols+` FROM (SELECT * FROM {p}`+kind+` ORDER BY id DESC LIMIT $1) last ORDER BY id`), n)
	if err != nil {
		return nil, fmt.Errorf("sqlgate: last %s: %w", kind, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var fence int64
		if err := rows.Scan(&r.Resource, &fence, &r.Kind, &r.Detail, &r.AtMs); err != nil {
			return nil, fmt.Errorf("sqlgate: last %s: %w", kind, err)
		}
		r.FenceToken = uint64(fence)
		out = append(out, r)
	}
	return out, rows.Err()
}

// LastActions returns the last n (at most OverviewRowsMax) operator
// actions on any subject, oldest first.
func (g *Gate) LastActions(ctx context.Context, q DBTX, n int) ([]Action, error) {
	rows, err := q.QueryContext(ctx, g.q(`SELECT subject, action, operator, detail, at_ms FROM
		(SELECT id, subject, action, operator, detail, at_ms FROM {p}operator_actions ORDER BY id DESC LIMIT $1) last
		ORDER BY id`), boundRows(n))
	if err != nil {
		return nil, fmt.Errorf("sqlgate: last actions: %w", err)
	}
	defer rows.Close()
	var out []Action
	for rows.Next() {
		var a Action
		if err := rows.Scan(&a.Subject, &a.Action, &a.Operator, &a.Detail, &a.AtMs); err != nil {
			return nil, fmt.Errorf("sqlgate: last actions: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func boundRows(n int) int {
	if n <= 0 || n > OverviewRowsMax {
		return OverviewRowsMax
	}
	return n
}
