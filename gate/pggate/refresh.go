package pggate

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The refresh is the end of every install: the gate's code created again
// from the source over whatever schema version the database came from,
// so that it ends as a fresh install does (upgrade_test.go compares them,
// catalog entry by catalog entry). Most of the source runs as written
// (CREATE OR REPLACE FUNCTION keeps a function's identity, its grants and
// whatever depends on it, and takes no lock a writer waits on); types
// and triggers, which have no OR REPLACE that fits, are created when
// missing and, for a type whose attributes changed, created again.

// code is the source, read for one install: its types and its triggers
// apart, the rest as written.
type code struct {
	types      []codeObject // CREATE TYPE fencegate.<name> AS (…);
	triggers   []codeObject // CREATE [CONSTRAINT] TRIGGER <name> … ON fencegate.<table> …;
	files      []codeFile   // the source files without them
	privileges string
}

type codeObject struct {
	name  string // the type's, or the trigger's
	table string // a trigger's table, schema-qualified
	stmt  string
}

type codeFile struct{ name, text string }

var (
	typeStmt    = regexp.MustCompile(`(?ms)^CREATE TYPE fencegate\.(\w+) AS \(.*?\n\);\n`)
	triggerStmt = regexp.MustCompile(`(?ms)^CREATE (?:CONSTRAINT )?TRIGGER (\w+) .*? ON (fencegate\.\w+)\s.*?;\n`)
	// unread is a type or trigger left in the text: it would fail on a
	// database that has it.
	unread = regexp.MustCompile(`(?m)^CREATE (TYPE|TRIGGER|CONSTRAINT TRIGGER|FUNCTION) .*`)
)

func loadCode(cryptoSchema string) (*code, error) {
	c := &code{}
	for _, name := range source {
		text, err := readSQL(name, cryptoSchema)
		if err != nil {
			return nil, err
		}
		for _, m := range typeStmt.FindAllStringSubmatch(text, -1) {
			c.types = append(c.types, codeObject{name: m[1], stmt: m[0]})
		}
		for _, m := range triggerStmt.FindAllStringSubmatch(text, -1) {
			c.triggers = append(c.triggers, codeObject{name: m[1], table: m[2], stmt: m[0]})
		}
		text = triggerStmt.ReplaceAllString(typeStmt.ReplaceAllString(text, ""), "")
		if m := unread.FindString(text); m != "" {
			return nil, fmt.Errorf("pggate: %s: %q… is not in the form the install reads (see refresh.go)", name, m)
		}
		c.files = append(c.files, codeFile{name, text})
	}
	var err error
	c.privileges, err = readSQL(privilegesFile, cryptoSchema)
	return c, err
}

// refreshStep is one step of the refresh, named for the error that
// stops it.
type refreshStep struct {
	name string
	run  func(context.Context, *sql.Tx, *code) error
}

// refreshSteps are the refresh, in order: a function's types before it,
// a trigger's function before the trigger, the stale dropped once every
// function of the source has been created (in this transaction), the
// privileges over what is left.
var refreshSteps = []refreshStep{
	{"types", ensureTypes},
	{"functions", runFiles},
	{"triggers", ensureTriggers},
	{"drop what the source no longer has", dropStale},
	{"privileges", func(ctx context.Context, tx *sql.Tx, c *code) error {
		_, err := tx.ExecContext(ctx, c.privileges)
		return err
	}},
}

// ensureTypes creates each type of the source that is missing and, for
// one whose attributes differ from the source's, drops it with the
// gate's functions that take or return it and creates it again (the
// functions step creates them again too).
func ensureTypes(ctx context.Context, tx *sql.Tx, c *code) error {
	for _, t := range c.types {
		have, err := typeAttributes(ctx, tx, "fencegate."+t.name)
		if err != nil {
			return err
		}
		if have != "" {
			// The source's type under another name, for PostgreSQL to
			// spell its attributes as it spells the installed one's.
			probe := "fencegate.install_probe_" + t.name
			if _, err := tx.ExecContext(ctx, strings.Replace(t.stmt, "fencegate."+t.name, probe, 1)); err != nil {
				return fmt.Errorf("type %s: %w", t.name, err)
			}
			w, err := typeAttributes(ctx, tx, probe)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DROP TYPE `+probe); err != nil {
				return err
			}
			if w == have {
				continue
			}
			if err := dropType(ctx, tx, "fencegate."+t.name); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, t.stmt); err != nil {
			return fmt.Errorf("type %s: %w", t.name, err)
		}
	}
	return nil
}

// typeAttributes lists a composite type's attributes ("" when it does
// not exist).
func typeAttributes(ctx context.Context, tx *sql.Tx, name string) (string, error) {
	var attrs sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
  FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE t.oid = to_regtype($1)`, name).Scan(&attrs)
	return attrs.String, err
}

// dropType drops type name and the gate's functions that depend on it.
// Anything else that depends on it stops the install: it is not the
// gate's to drop.
func dropType(ctx context.Context, tx *sql.Tx, name string) error {
	fns, err := queryStrings(ctx, tx, `SELECT `+gateFunction+` FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
 WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_type'::regclass AND d.refobjid = to_regtype($1)
   AND p.pronamespace = 'fencegate'::regnamespace ORDER BY 1`, name)
	if err != nil {
		return err
	}
	var stmts []string
	for _, f := range fns {
		stmts = append(stmts, "DROP FUNCTION "+f)
	}
	for _, stmt := range append(stmts, "DROP TYPE "+name) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("type %s changed: %s: %w", name, stmt, err)
		}
	}
	return nil
}

// runFiles runs the source files, types and triggers taken out.
func runFiles(ctx context.Context, tx *sql.Tx, c *code) error {
	for _, f := range c.files {
		if _, err := tx.ExecContext(ctx, f.text); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

// ensureTriggers creates each trigger of the source whose table has no
// trigger of that name, and drops the triggers on the gate's tables that
// the source does not name. A trigger that changes takes a new name.
func ensureTriggers(ctx context.Context, tx *sql.Tx, c *code) error {
	var named []string
	for _, t := range c.triggers {
		named = append(named, t.table+" "+t.name)
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = $2`, t.table, t.name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := tx.ExecContext(ctx, t.stmt); err != nil {
				return fmt.Errorf("trigger %s: %w", t.name, err)
			}
		}
	}
	have, err := queryStrings(ctx, tx, `SELECT 'fencegate.' || c.relname || ' ' || t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE NOT t.tgisinternal AND c.relnamespace = 'fencegate'::regnamespace ORDER BY 1`)
	if err != nil {
		return err
	}
	for _, h := range have {
		if !slices.Contains(named, h) {
			table, name, _ := strings.Cut(h, " ")
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`DROP TRIGGER %s ON %s`, quoteIdent(name), table)); err != nil {
				return fmt.Errorf("trigger %s: %w", name, err)
			}
		}
	}
	return nil
}

// dropStale drops the gate's functions the source no longer defines:
// every function in the schema fencegate that this transaction did not
// create or replace (its pg_proc row is older), pgcrypto's aside; then
// the composite types the source no longer defines.
func dropStale(ctx context.Context, tx *sql.Tx, c *code) error {
	fns, err := queryStrings(ctx, tx, `SELECT `+gateFunction+` FROM pg_proc p
 WHERE p.pronamespace = 'fencegate'::regnamespace
   AND p.xmin::text::bigint <> pg_current_xact_id()::text::bigint % 4294967296
   AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
 ORDER BY 1`)
	if err != nil {
		return err
	}
	for _, f := range fns {
		if _, err := tx.ExecContext(ctx, `DROP FUNCTION `+f); err != nil {
			return fmt.Errorf("function %s: %w", f, err)
		}
	}
	types, err := queryStrings(ctx, tx, `SELECT t.typname::text FROM pg_type t JOIN pg_class r ON r.oid = t.typrelid
 WHERE t.typnamespace = 'fencegate'::regnamespace AND r.relkind = 'c' ORDER BY 1`)
	if err != nil {
		return err
	}
	for _, t := range types {
		if !slices.ContainsFunc(c.types, func(o codeObject) bool { return o.name == t }) {
			if _, err := tx.ExecContext(ctx, `DROP TYPE fencegate.`+quoteIdent(t)); err != nil {
				return fmt.Errorf("type %s: %w", t, err)
			}
		}
	}
	return nil
}

// gateFunction is the SQL of function p's name and arguments for DROP
// FUNCTION, whatever the search_path.
const gateFunction = `'fencegate.' || quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')'`

// queryStrings runs a query of one text column and returns its rows.
func queryStrings(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
