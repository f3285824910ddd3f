package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fencegate/fencegate/gate"
)

// ResourceColumnDefault is the column Protect takes to name a protected
// row's resource.
const ResourceColumnDefault = "resource"

// ResourceExprBytesMax bounds a resource expression, 256 bytes.
const ResourceExprBytesMax = 256

// ErrUnguarded: a write to a protected table that the database's coverage
// guard refused (SQLSTATE UnguardedState on PostgreSQL, a message
// starting "fencegate: FG020" on SQLite). Apply and Run wrap it, with
// ErrBusiness, when the business function's write was the refused one.
var ErrUnguarded = errors.New("sqlgate: FG020: write to a protected table outside an accept of the row's own resource in this transaction")

// UnguardedState is the SQLSTATE the PostgreSQL guard refuses with, as
// the gate inside PostgreSQL does (pggate.StateUnguarded).
const UnguardedState = "FG020"

// Protect is ProtectResource with the rows' resource in the column
// ResourceColumnDefault ("resource").
func (g *Gate) Protect(ctx context.Context, db *sql.DB, table string, mode gate.Mode, operator string) error {
	return g.ProtectResource(ctx, db, table, ResourceColumnDefault, mode, operator)
}

// ProtectResource registers table as protected and (re)installs its
// coverage guard in mode. resource names a row's resource: a column, or
// an SQL expression over the row's columns (at most ResourceExprBytesMax
// bytes, without ";", "$" or comments; on PostgreSQL evaluated with
// search_path pg_catalog, so qualify any function of your own). The
// database then admits an INSERT, UPDATE or DELETE of a row only when
// the row's resource (before and after, for an UPDATE) was accepted by
// the gate in the same transaction — in enforce mode, for a table in
// enforce mode; a row without such an accept is refused (enforce, error
// ErrUnguarded) or let through and counted (shadow). A table moves
// shadow → enforce, never back (gate.ErrModeDowngrade); protecting it
// again may change resource. The action is recorded.
//
// The accept that admits a row (the mark) is one the gate records: on
// PostgreSQL the accept's receipt itself, stored in this transaction; on
// SQLite a row the gate writes between the accept and its receipt. No
// session setting or other statement that leaves the gate's tables alone
// creates one. Code that writes the gate's own tables by hand can, which
// is why the application's other roles should have none of their
// privileges (docs/guarantees.md, "Coverage").
func (g *Gate) ProtectResource(ctx context.Context, db *sql.DB, table, resource string, mode gate.Mode, operator string) error {
	if err := checkIdent("table", table); err != nil {
		return err
	}
	if err := checkResourceExpr(resource); err != nil {
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
	if _, err := tx.ExecContext(ctx, g.q(`INSERT INTO {p}protected (table_name, mode, resource_expr) VALUES ($1, $2, $3)
  ON CONFLICT (table_name) DO UPDATE SET mode = excluded.mode, resource_expr = excluded.resource_expr`), table, string(next), resource); err != nil {
		return fmt.Errorf("sqlgate: protect %s: %w", table, err)
	}
	if err := g.installGuard(ctx, tx, table, resource, string(next), true); err != nil {
		return err
	}
	detail := fmt.Sprintf("protect %s mode %s → %s, resource %s", table, cur, next, resource)
	if _, err := tx.ExecContext(ctx, g.stmt.insertAction, table, "protect", operator, detail, g.nowMs()); err != nil {
		return fmt.Errorf("sqlgate: protect: %w", err)
	}
	return tx.Commit()
}

// checkResourceExpr refuses a resource expression that could leave the
// trigger it is spliced into: empty, too long, or with ";", "$", a
// comment or a NUL.
func checkResourceExpr(s string) error {
	bad := len(s) == 0 || len(s) > ResourceExprBytesMax || !utf8.ValidString(s)
	for _, tok := range []string{";", "$", "--", "/*", "*/", "\x00"} {
		bad = bad || strings.Contains(s, tok)
	}
	if bad {
		return fmt.Errorf("sqlgate: resource %q: want a column name or an SQL expression over the row's columns of 1..%d bytes without ';', '$', comments or NUL",
			s, ResourceExprBytesMax)
	}
	return nil
}

// installGuard (re)installs table's guard in tx. With check, an
// expression that does not evaluate on the table is an error; without
// (the schema-9 upgrade), a table without the column resource gets a
// guard that admits no row until it is protected again naming its
// resource, and a table that no longer exists is left alone.
func (g *Gate) installGuard(ctx context.Context, tx *sql.Tx, table, resource, mode string, check bool) error {
	spec := guardSpec{prefix: g.prefix, table: table, resource: resource, mode: mode}
	cols, err := g.tableColumns(ctx, tx, table)
	switch {
	case err != nil:
		return fmt.Errorf("sqlgate: protect %s: %w", table, err)
	case len(cols) == 0 && check:
		return fmt.Errorf("sqlgate: protect %s: no such table", table)
	case len(cols) == 0:
		return nil
	case !check && identRE.MatchString(resource) && !slices.Contains(cols, resource):
		spec.resource = ""
		if _, err := tx.ExecContext(ctx, g.q(`UPDATE {p}protected SET resource_expr = '' WHERE table_name = $1`), table); err != nil {
			return err
		}
	}
	spec.cols = cols
	if spec.resource != "" && check {
		probe := `SELECT (` + resource + `) FROM ` + table + ` LIMIT 0`
		if g.d == Postgres {
			probe = `SELECT (` + resource + `)::text FROM ` + table + ` AS t LIMIT 0`
		}
		if _, err := tx.ExecContext(ctx, probe); err != nil {
			return fmt.Errorf("sqlgate: protect %s: resource %q does not evaluate on its rows: %w", table, resource, err)
		}
	}
	if g.d == Postgres {
		if spec.schema, err = g.gateSchema(ctx, tx); err != nil {
			return err
		}
		if n := len(g.prefix + "guard_" + table); n > postgresIdentBytesMax {
			return fmt.Errorf("sqlgate: protect %s: the guard's name %sguard_%s has %d bytes, PostgreSQL keeps %d: use a shorter table prefix or table name",
				table, g.prefix, table, n, postgresIdentBytesMax)
		}
	}
	for _, s := range g.d.guard(spec) {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("sqlgate: protect %s: %w\n%s", table, err, s)
		}
	}
	return nil
}

// postgresIdentBytesMax is the longest identifier PostgreSQL keeps
// (NAMEDATALEN - 1); a longer one is cut, and two guards could share a
// name.
const postgresIdentBytesMax = 63

// tableColumns returns table's columns (none: no such table).
func (g *Gate) tableColumns(ctx context.Context, tx *sql.Tx, table string) ([]string, error) {
	q := `SELECT name FROM pragma_table_info($1) ORDER BY cid`
	if g.d == Postgres {
		q = `SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`
	}
	rows, err := tx.QueryContext(ctx, g.d.placeholders(q), table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// gateSchema returns the schema of the gate's tables, quoted: the guard
// names them qualified, since it runs with a fixed search_path.
func (g *Gate) gateSchema(ctx context.Context, tx *sql.Tx) (string, error) {
	var schema string
	err := tx.QueryRowContext(ctx, `SELECT quote_ident(n.nspname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.oid = to_regclass($1)`, g.prefix+"receipts").Scan(&schema)
	if err != nil {
		return "", fmt.Errorf("sqlgate: the schema of %sreceipts: %w", g.prefix, err)
	}
	return schema, nil
}

// reguard is migration 9's second half, in its transaction: every
// protected table's guard reinstalled per resource (resource_expr, by
// default the column resource), then migration 1's guard setup dropped.
func (g *Gate) reguard(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, g.q(`SELECT table_name, mode, resource_expr FROM {p}protected ORDER BY table_name`))
	if err != nil {
		return err
	}
	var tables [][3]string
	for rows.Next() {
		var t [3]string
		if err := rows.Scan(&t[0], &t[1], &t[2]); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		if err := g.installGuard(ctx, tx, t[0], t[2], t[1], false); err != nil {
			return err
		}
	}
	for _, s := range splitStatements(g.q(g.d.dropGuardSetup)) {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%w\n%s", err, s)
		}
	}
	return nil
}

// Coverage is gate.Coverage, the measured share of protected-table
// writes that went through an accept of their own resource.
type Coverage = gate.Coverage

// Coverage reads the coverage counters and the protected tables. Counts
// are of committed writes: a rolled-back transaction takes its counts
// with it.
func (g *Gate) Coverage(ctx context.Context, q DBTX) (gate.Coverage, error) {
	c := gate.Coverage{Tables: []gate.ProtectedTable{}}
	var gated int64
	if err := q.QueryRowContext(ctx, g.q(`SELECT coalesce(sum(gated_writes), 0) FROM {p}resources`)).Scan(&gated); err != nil {
		return c, fmt.Errorf("sqlgate: coverage: %w", err)
	}
	c.Gated = uint64(gated)
	rows, err := q.QueryContext(ctx, g.q(`SELECT table_name, mode, resource_expr, ungated FROM {p}protected ORDER BY table_name`))
	if err != nil {
		return c, fmt.Errorf("sqlgate: coverage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t gate.ProtectedTable
		var mode string
		var ungated int64
		if err := rows.Scan(&t.Table, &mode, &t.Resource, &ungated); err != nil {
			return c, fmt.Errorf("sqlgate: coverage: %w", err)
		}
		t.Mode, t.Ungated = gate.Mode(mode), uint64(ungated)
		c.Ungated += t.Ungated
		c.Tables = append(c.Tables, t)
	}
	return c, rows.Err()
}

// GatedWrites returns how many protected rows were written under an accept
// of resource (0 for a resource the gate never saw).
func (g *Gate) GatedWrites(ctx context.Context, q DBTX, resource string) (uint64, error) {
	var n int64
	err := q.QueryRowContext(ctx, g.q(`SELECT coalesce((SELECT gated_writes FROM {p}resources WHERE resource = $1), 0)`), resource).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlgate: gated writes: %w", err)
	}
	return uint64(n), nil
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
