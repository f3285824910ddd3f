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
	// forUpdate is appended to the fence-row read (alias r) to lock the row.
	forUpdate string
	// markLocked is appended to the fence-row read's columns when Run owns
	// the transaction: it marks the transaction as inside an accepting
	// Apply in the same round trip ("" where marking is separate).
	markLocked string
	// guardProbe, if set, is appended to the fence-row read's columns: a
	// boolean "some table is protected", read under the same lock as the
	// row, so an apply skips marking where no guard could look at the mark.
	guardProbe string
	// mark marks the transaction as inside an accepting Apply (no
	// savepoint); unmark clears the mark.
	mark, unmark string
	// finishAccept is one statement that clears the mark, adds the
	// counted guarded writes to the fence row, stores the new fence state
	// and inserts the receipt (arguments: resource, highest, root, lastSeq,
	// then the receipt's id and columns).
	finishAccept string
	// serial is the type of an auto-assigned integer primary key.
	serial string
	// clustered follows CREATE TABLE (…) for tables stored in key order.
	clustered string
	// guard returns the DDL that (re)installs the coverage guard on table.
	guard func(p, table string, mode string) []string
	// guardSetup is DDL run once by the migration (trigger function, marker).
	guardSetup string
	// invariants is migration 2: triggers refusing a lower highest_fence
	// and any change to a receipt. One statement per line.
	invariants string
	// acceptEntry is migration 3: what finishAccept needs in the schema
	// ("" where one plain statement does it). Inside a trigger body the
	// ";" starts a line: splitStatements splits at lines ending in ";".
	acceptEntry string
	// segmentChain is migration 4's trigger: a receipt with seq > 1 needs
	// the receipt of seq-1 under the same resource, fence and operation.
	segmentChain string
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
	// WITHOUT ROWID: receipts live in their primary-key b-tree, one page
	// write per receipt instead of two.
	clustered: " WITHOUT ROWID",
	// The marker is a gate-owned row that exists only between mark
	// and finishAccept inside one transaction: SQLite has one writer at a
	// time, so no other connection's write can see it. It is only written
	// when some table is protected, which guardProbe reads with the fence
	// row under the same write lock (Protect cannot slip in between), so
	// an apply where no table is protected runs no marker statement at
	// all; mark keeps its own EXISTS for Apply in a caller's transaction.
	mark:       "INSERT INTO {p}apply_marker(id, writes) SELECT 1, 0 WHERE EXISTS (SELECT 1 FROM {p}protected)",
	guardProbe: ", EXISTS (SELECT 1 FROM {p}protected)",
	// One statement through the write-only view of migration 3, whose
	// INSTEAD OF trigger does in one VM program what took three
	// statements (read-and-delete the marker, update the fence row, insert
	// the receipt). The marker delete names its key so that an empty
	// marker table is not rewritten.
	finishAccept: `INSERT INTO {p}accept (resource, highest_fence, root, last_seq, id, fence, operation_root, operation_id, seq, payload_digest, grant_digest, accepted_at_ms, mode, outcome)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
	acceptEntry: `CREATE VIEW {p}accept AS SELECT NULL AS resource, NULL AS highest_fence, NULL AS root, NULL AS last_seq, NULL AS id, NULL AS fence,
  NULL AS operation_root, NULL AS operation_id, NULL AS seq, NULL AS payload_digest, NULL AS grant_digest, NULL AS accepted_at_ms, NULL AS mode, NULL AS outcome WHERE 0;
CREATE TRIGGER {p}accept_insert INSTEAD OF INSERT ON {p}accept BEGIN
  UPDATE {p}resources SET highest_fence = NEW.highest_fence, root = NEW.root, last_seq = NEW.last_seq,
    gated_writes = gated_writes + coalesce((SELECT writes FROM {p}apply_marker WHERE id = 1), 0) WHERE resource = NEW.resource
  ; DELETE FROM {p}apply_marker WHERE id = 1
  ; INSERT INTO {p}receipts (id, resource, fence, operation_root, operation_id, seq, payload_digest, grant_digest, accepted_at_ms, mode, outcome)
    VALUES (NEW.id, NEW.resource, NEW.fence, NEW.operation_root, NEW.operation_id, NEW.seq, NEW.payload_digest, NEW.grant_digest, NEW.accepted_at_ms, NEW.mode, NEW.outcome)
  ; END;`,
	segmentChain: `CREATE TRIGGER {p}receipts_segment_chain BEFORE INSERT ON {p}receipts WHEN NEW.seq > 1 AND NOT EXISTS (SELECT 1 FROM {p}receipts WHERE resource = NEW.resource AND fence = NEW.fence AND seq = NEW.seq - 1 AND operation_id = NEW.operation_id) BEGIN SELECT RAISE(ABORT, 'fencegate: a receipt needs its previous segment under the same fence and operation'); END;`,
	guardSetup:   "CREATE TABLE {p}apply_marker (id INTEGER PRIMARY KEY CHECK (id = 1), writes INTEGER NOT NULL)",
	guard:        sqliteGuard,
	invariants: `CREATE TRIGGER {p}fence_never_decreases BEFORE UPDATE OF highest_fence ON {p}resources WHEN NEW.highest_fence < OLD.highest_fence BEGIN SELECT RAISE(ABORT, 'fencegate: highest_fence never decreases'); END;
CREATE TRIGGER {p}receipts_never_updated BEFORE UPDATE ON {p}receipts BEGIN SELECT RAISE(ABORT, 'fencegate: receipts are never updated or deleted'); END;
CREATE TRIGGER {p}receipts_never_deleted BEFORE DELETE ON {p}receipts BEGIN SELECT RAISE(ABORT, 'fencegate: receipts are never updated or deleted'); END;`,
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
	forUpdate:    " FOR UPDATE OF r",
	markLocked:   ", set_config('fencegate.apply', '1', true), set_config('fencegate.writes', '0', true)",
	mark:         "SELECT set_config('fencegate.apply', '1', true), set_config('fencegate.writes', '0', true)",
	unmark:       "SELECT set_config('fencegate.apply', '', true)",
	finishAccept: `WITH w AS (SELECT current_setting('fencegate.writes')::bigint AS n, set_config('fencegate.apply', '', true) AS cleared),
u AS (UPDATE {p}resources SET highest_fence = $2, root = $3, last_seq = $4, gated_writes = gated_writes + (SELECT n FROM w WHERE cleared IS NOT NULL) WHERE resource = $1)
INSERT INTO {p}receipts (id, resource, fence, operation_root, operation_id, seq, payload_digest, grant_digest, accepted_at_ms, mode, outcome)
VALUES ($5, $1, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
	serial: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	segmentChain: `CREATE OR REPLACE FUNCTION {p}segment_chain() RETURNS trigger LANGUAGE plpgsql AS $fg$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM {p}receipts WHERE resource = NEW.resource AND fence = NEW.fence AND seq = NEW.seq - 1 AND operation_id = NEW.operation_id) THEN
    RAISE EXCEPTION 'fencegate: a receipt needs its previous segment under the same fence and operation' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $fg$;
CREATE TRIGGER {p}receipts_segment_chain BEFORE INSERT ON {p}receipts FOR EACH ROW WHEN (NEW.seq > 1) EXECUTE FUNCTION {p}segment_chain();`,
	// Transaction-local settings: rolled back with a savepoint, gone at
	// commit, invisible to every other transaction.
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
	invariants: `CREATE OR REPLACE FUNCTION {p}refuse() RETURNS trigger LANGUAGE plpgsql AS $fg$ BEGIN RAISE EXCEPTION 'fencegate: %', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation'; END $fg$;
CREATE TRIGGER {p}fence_never_decreases BEFORE UPDATE OF highest_fence ON {p}resources FOR EACH ROW WHEN (NEW.highest_fence < OLD.highest_fence) EXECUTE FUNCTION {p}refuse('highest_fence never decreases');
CREATE TRIGGER {p}receipts_never_changed BEFORE UPDATE OR DELETE ON {p}receipts FOR EACH ROW EXECUTE FUNCTION {p}refuse('receipts are never updated or deleted');
CREATE TRIGGER {p}receipts_never_truncated BEFORE TRUNCATE ON {p}receipts FOR EACH STATEMENT EXECUTE FUNCTION {p}refuse('receipts are never deleted');`,
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
