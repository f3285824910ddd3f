package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
)

// Protect registers table as protected and (re)installs its coverage
// guard in mode: enforce makes the database reject INSERT, UPDATE and
// DELETE made outside an accepting Apply of the same transaction; shadow
// counts them. A table moves shadow → enforce, never back
// (gate.ErrModeDowngrade). The action is recorded.
func (g *Gate) Protect(ctx context.Context, db *sql.DB, table string, mode gate.Mode, operator string) error {
	if err := checkIdent("table", table); err != nil {
		return err
	}
	if operator == "" {
		return errors.New("sqlgate: operator actions need the operator's name")
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlgate: protect: %w", err)
	}
	defer tx.Rollback()
	var cur string
	err = tx.QueryRowContext(ctx, g.q(`SELECT mode FROM {p}protected WHERE table_name = $1`), table).Scan(&cur)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		cur = string(gate.ModeShadow)
	case err != nil:
		return fmt.Errorf("sqlgate: protect: %w", err)
	}
	next, err := gate.ChangeMode(gate.Mode(cur), mode)
	if err != nil {
		return fmt.Errorf("sqlgate: protect %s: %w", table, err)
	}
	stmts := append([]string{
		g.q(`INSERT INTO {p}protected (table_name, mode) VALUES ($1, $2) ON CONFLICT (table_name) DO UPDATE SET mode = excluded.mode`),
	}, g.d.guard(g.prefix, table, string(next))...)
	for i, s := range stmts {
		var args []any
		if i == 0 {
			args = []any{table, string(next)}
		}
		if _, err := tx.ExecContext(ctx, s, args...); err != nil {
			return fmt.Errorf("sqlgate: protect %s: %w", table, err)
		}
	}
	if _, err := tx.ExecContext(ctx, g.stmt.insertAction, table, "protect", operator, fmt.Sprintf("protect %s mode %s → %s", table, cur, next), g.nowMs()); err != nil {
		return fmt.Errorf("sqlgate: protect: %w", err)
	}
	return tx.Commit()
}

// Coverage is the measured share of protected-table writes that went
// through an accepting Apply.
type Coverage struct {
	// Gated counts protected-table rows written inside accepting Applies.
	Gated uint64
	// Ungated counts protected-table rows written outside one, in shadow
	// mode (in enforce mode such writes fail and never land).
	Ungated uint64
	// Ratio is Gated / (Gated + Ungated), and 1 when both are 0.
	Ratio float64
}

// Coverage reads the coverage counters. Counts are of committed writes:
// a rolled-back transaction takes its counts with it.
func (g *Gate) Coverage(ctx context.Context, q DBTX) (Coverage, error) {
	var c Coverage
	var gated, ungated int64
	err := q.QueryRowContext(ctx, g.q(`SELECT (SELECT coalesce(sum(gated_writes), 0) FROM {p}resources), (SELECT coalesce(sum(ungated), 0) FROM {p}protected)`)).Scan(&gated, &ungated)
	if err != nil {
		return c, fmt.Errorf("sqlgate: coverage: %w", err)
	}
	c.Gated, c.Ungated, c.Ratio = uint64(gated), uint64(ungated), 1
	if total := c.Gated + c.Ungated; total > 0 {
		c.Ratio = float64(c.Gated) / float64(total)
	}
	return c, nil
}

// Record is one quarantine, alarm or shadow-log row.
type Record struct {
	Resource   string
	FenceToken uint64
	Kind       string // quarantine: the original receipt ID; alarm: outcome; shadow: outcome
	Detail     string
	AtMs       int64
}

// Records lists a resource's rows of one kind: "quarantine", "alarms" or
// "shadow_log", oldest first.
func (g *Gate) Records(ctx context.Context, q DBTX, kind, resource string) ([]Record, error) {
	cols := map[string]string{
		"quarantine": "fence, original_receipt, reason, recorded_at_ms",
		"alarms":     "fence, kind, detail, raised_at_ms",
		"shadow_log": "fence, outcome, reason, at_ms",
	}[kind]
	if cols == "" {
		return nil, fmt.Errorf("sqlgate: unknown record kind %q", kind)
	}
	rows, err := q.QueryContext(ctx, g.q(`SELECT `+cols+` FROM {p}`+kind+` WHERE resource = $1 ORDER BY id`), resource)
	if err != nil {
		return nil, fmt.Errorf("sqlgate: records: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r := Record{Resource: resource}
		var fence int64
		if err := rows.Scan(&fence, &r.Kind, &r.Detail, &r.AtMs); err != nil {
			return nil, fmt.Errorf("sqlgate: records: %w", err)
		}
		r.FenceToken = uint64(fence)
		out = append(out, r)
	}
	return out, rows.Err()
}
