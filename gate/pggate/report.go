package pggate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/report"
)

// Reporting is gate/report's Source and Resumer for the gate inside
// PostgreSQL, so a small process beside the database (report.Reporter)
// can show its resources, alarms and quarantines on the registry's
// dashboard and apply a resume confirmed there. It reads as the gate's
// owner (or a role granted SELECT on the gate's tables).
type Reporting struct {
	DB *sql.DB // required
}

var (
	_ report.CoverageSource = Reporting{}
	_ report.Resumer        = Reporting{}
)

// Coverage implements report.CoverageSource.
func (r Reporting) Coverage(ctx context.Context) (gate.Coverage, error) {
	if r.DB == nil {
		return gate.Coverage{}, errors.New("pggate: Reporting.DB is required")
	}
	return Coverage(ctx, r.DB)
}

// Resources implements report.Source: paused resources first, then those
// named in recent, then the others by name, at most limit; each with its
// alarm and quarantine counts, last rows and last operator action.
func (r Reporting) Resources(ctx context.Context, recent []string, limit int) ([]report.ResourceView, int, error) {
	if r.DB == nil {
		return nil, 0, errors.New("pggate: Reporting.DB is required")
	}
	tx, err := r.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("pggate: report: %w", err)
	}
	defer tx.Rollback()
	var total int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM fencegate.resources`).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("pggate: report: %w", err)
	}
	names, err := strings1(ctx, tx, `SELECT resource FROM fencegate.resources ORDER BY paused DESC, resource LIMIT $1`, max(limit, 0))
	if err != nil {
		return nil, 0, err
	}
	for _, n := range recent {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	views := make([]report.ResourceView, 0, len(names))
	for _, name := range names {
		st, err := State(ctx, tx, name)
		if err != nil {
			return nil, 0, err
		}
		views = append(views, report.ViewOf(name, st))
	}
	views = report.Order(views, recent, limit)
	return views, total, fill(ctx, tx, views)
}

// strings1 runs a query of one text column.
func strings1(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("pggate: report: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("pggate: report: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// fill adds the counts, the last alarm and quarantine rows (oldest
// first) and the last operator action of each view.
func fill(ctx context.Context, tx *sql.Tx, views []report.ResourceView) error {
	byName := make(map[string]int, len(views))
	names := make([]string, len(views))
	for i, v := range views {
		byName[v.Resource], names[i] = i, v.Resource
	}
	// Per resource: the last RecordsPerResourceMax rows, and one row of
	// each class (alarm, quarantine) to carry that class's count.
	rows, err := tx.QueryContext(ctx, `SELECT resource, kind, fence, detail, at_ms, n, k FROM (
    SELECT r.*, count(*) OVER (PARTITION BY resource, kind = 'QUARANTINED') AS n,
      row_number() OVER (PARTITION BY resource ORDER BY at_ms DESC, id DESC) AS k,
      row_number() OVER (PARTITION BY resource, kind = 'QUARANTINED' ORDER BY at_ms DESC, id DESC) AS kc
    FROM (SELECT resource, kind, fence, detail, at_ms, id FROM fencegate.alarms WHERE resource = ANY($1)
      UNION ALL SELECT resource, 'QUARANTINED', fence, reason, at_ms, id FROM fencegate.quarantine WHERE resource = ANY($1)) r) x
  WHERE k <= $2 OR kc = 1 ORDER BY at_ms, k DESC`, names, report.RecordsPerResourceMax)
	if err != nil {
		return fmt.Errorf("pggate: report: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var rec report.RecordView
		var name string
		var n, k int
		if err := rows.Scan(&name, &rec.Kind, &rec.Fence, &rec.Detail, &rec.AtMs, &n, &k); err != nil {
			return fmt.Errorf("pggate: report: %w", err)
		}
		v := &views[byName[name]]
		if rec.Kind == "QUARANTINED" {
			v.Quarantined = n
		} else {
			v.Alarms = n
		}
		if k <= report.RecordsPerResourceMax {
			rec.Kind, rec.Detail = report.Cut(rec.Kind), report.Cut(rec.Detail)
			v.Recent = append(v.Recent, rec)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pggate: report: %w", err)
	}
	return actions(ctx, tx, views, byName, names)
}

func actions(ctx context.Context, tx *sql.Tx, views []report.ResourceView, byName map[string]int, names []string) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT ON (subject) subject, action, operator, detail, at_ms
  FROM fencegate.operator_actions WHERE subject = ANY($1) ORDER BY subject, id DESC`, names)
	if err != nil {
		return fmt.Errorf("pggate: report: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var a report.ActionView
		if err := rows.Scan(&name, &a.Action, &a.Operator, &a.Detail, &a.AtMs); err != nil {
			return fmt.Errorf("pggate: report: %w", err)
		}
		a.Action, a.Operator, a.Detail = report.Cut(a.Action), report.Cut(a.Operator), report.Cut(a.Detail)
		views[byName[name]].LastAction = &a
	}
	return rows.Err()
}

// Resume implements report.Resumer with the gate's recorded resume.
func (r Reporting) Resume(ctx context.Context, resource string, floor uint64, operator, note string) error {
	if r.DB == nil {
		return errors.New("pggate: Reporting.DB is required")
	}
	return Resume(ctx, r.DB, resource, floor, operator, note)
}
