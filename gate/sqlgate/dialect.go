package sqlgate

import (
	"fmt"
	"regexp"
	"strings"
)

// Dialect is what differs between the SQL databases the gate runs on:
// placeholders, row locking, identity columns, and how the coverage guard
// knows it is inside an accepting Apply. Use SQLite or Postgres.
type Dialect struct {
	name string
	// placeholders turns the $N placeholders the queries are written with
	// into the dialect's own.
	placeholders func(q string) string
	// forUpdate is appended to the fence-row read to lock the row.
	forUpdate string
	// serial is the type of an auto-assigned integer primary key.
	serial string
	// enterApply opens the savepoint and marks the transaction as inside
	// an accepting Apply; no arguments, may be several statements.
	enterApply string
	// leaveApply clears the mark and returns the number of protected-table
	// writes the guard counted while it was set.
	leaveApply string
	// guard returns the DDL that (re)installs the coverage guard on table.
	guard func(p, table string, mode string) []string
	// guardSetup is DDL run once by the migration (trigger function, marker).
	guardSetup string
}

// Name returns "sqlite" or "postgres".
func (d *Dialect) Name() string { return d.name }

// SQLite is the dialect for modernc.org/sqlite (the embedded default).
// SQLite serializes all writers: applies on different resources do not
// deadlock but do queue behind one another. Open the database with
// OpenSQLite (or _txlock=immediate, WAL and a busy timeout) so that
// transactions take the write lock at BEGIN.
var SQLite = &Dialect{
	name:         "sqlite",
	placeholders: func(q string) string { return strings.ReplaceAll(q, "$", "?") },
	serial:       "INTEGER PRIMARY KEY",
	// The marker is a gate-owned row that exists only between enterApply
	// and leaveApply inside one transaction: SQLite has one writer at a
	// time, so no other connection's write can see it.
	enterApply: "SAVEPOINT fencegate_apply; INSERT INTO {p}apply_marker(id, writes) VALUES (1, 0)",
	leaveApply: "DELETE FROM {p}apply_marker RETURNING writes",
	guardSetup: "CREATE TABLE {p}apply_marker (id INTEGER PRIMARY KEY CHECK (id = 1), writes INTEGER NOT NULL)",
	guard:      sqliteGuard,
}

func sqliteGuard(p, table, mode string) []string {
	var ddl []string
	for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
		name := fmt.Sprintf("%sguard_%s_%s", p, table, strings.ToLower(op))
		check := fmt.Sprintf("SELECT RAISE(ABORT, 'fencegate: %s on protected table %s outside an accepting gate Apply') WHERE NOT EXISTS (SELECT 1 FROM %sapply_marker);", op, table, p)
		if mode == "shadow" {
			check = fmt.Sprintf("UPDATE %sprotected SET ungated = ungated + 1 WHERE table_name = '%s' AND NOT EXISTS (SELECT 1 FROM %sapply_marker);", p, table, p)
		}
		ddl = append(ddl,
			"DROP TRIGGER IF EXISTS "+name,
			fmt.Sprintf("CREATE TRIGGER %s BEFORE %s ON %s BEGIN %s UPDATE %sapply_marker SET writes = writes + 1; END", name, op, table, check, p))
	}
	return ddl
}

// Postgres is the dialect for PostgreSQL through pgx/v5/stdlib. Applies
// lock the resource's fence row (SELECT … FOR UPDATE), so applies on one
// resource serialize and applies on different resources do not block each
// other. Use READ COMMITTED (the default) transactions.
var Postgres = &Dialect{
	name:         "postgres",
	placeholders: func(q string) string { return q },
	forUpdate:    " FOR UPDATE",
	serial:       "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	// Transaction-local settings: rolled back with the savepoint, gone at
	// commit, invisible to every other transaction.
	enterApply: "SAVEPOINT fencegate_apply; SELECT set_config('fencegate.apply', '1', true), set_config('fencegate.writes', '0', true)",
	leaveApply: "SELECT current_setting('fencegate.writes')::bigint, set_config('fencegate.apply', '', true)",
	guardSetup: `CREATE OR REPLACE FUNCTION {p}guard() RETURNS trigger LANGUAGE plpgsql AS $fg$
BEGIN
  IF coalesce(current_setting('fencegate.apply', true), '') = '1' THEN
    PERFORM set_config('fencegate.writes', (current_setting('fencegate.writes')::bigint + 1)::text, true);
  ELSIF TG_ARGV[0] = 'enforce' THEN
    RAISE EXCEPTION 'fencegate: % on protected table % outside an accepting gate Apply', TG_OP, TG_TABLE_NAME
      USING ERRCODE = 'insufficient_privilege';
  ELSE
    UPDATE {p}protected SET ungated = ungated + 1 WHERE table_name = TG_TABLE_NAME;
  END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $fg$`,
	guard: func(p, table, mode string) []string {
		name := p + "guard_" + table
		return []string{
			fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", name, table),
			fmt.Sprintf("CREATE TRIGGER %s BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION %sguard('%s')", name, table, p, mode),
		}
	},
}

// identRE is what a table prefix or protected table name may be: a plain
// lower-case SQL identifier, so it can be spliced into DDL safely.
var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

func checkIdent(what, s string) error {
	if !identRE.MatchString(s) {
		return fmt.Errorf("sqlgate: %s %q: want [a-z_][a-z0-9_]{0,47}", what, s)
	}
	return nil
}
