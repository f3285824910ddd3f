package sqlgate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// migrations are the schema versions, applied in order, each once, in one
// transaction each. Append; never edit a released one. {p} is the table
// prefix, {serial} the dialect's auto-assigned key, {guard} its guard setup,
// {clustered} what makes a table stored in primary-key order, {invariants}
// its triggers that hold the gate's storage invariants, {accept} what its
// one-statement finish of an accept needs, {segmentChain} its trigger
// refusing a receipt whose previous segment is missing, {compact} its
// schema-5 layout, {issueTimes} its schema-6 columns, {stateInOrder} its
// schema-7 check of segment order, {dropImplied} its schema-8 drop of an
// implied trigger, {guardRows} its schema-9 guard per resource,
// {orderInFunction} its schema-10 order check.
var migrations = []string{
	1: `
CREATE TABLE {p}resources (
  resource TEXT PRIMARY KEY,
  mode TEXT NOT NULL,
  highest_fence BIGINT NOT NULL DEFAULT 0,
  root TEXT NOT NULL DEFAULT '',
  last_seq BIGINT NOT NULL DEFAULT 0,
  min_policy_generation BIGINT NOT NULL DEFAULT 0,
  paused INTEGER NOT NULL DEFAULT 0,
  paused_reason TEXT NOT NULL DEFAULT '',
  gated_writes BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE {p}receipts (
  id TEXT NOT NULL,
  resource TEXT NOT NULL,
  fence BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  operation_id TEXT NOT NULL,
  operation_root TEXT NOT NULL,
  payload_digest TEXT NOT NULL,
  grant_digest TEXT NOT NULL,
  accepted_at_ms BIGINT NOT NULL,
  mode TEXT NOT NULL,
  outcome TEXT NOT NULL,
  PRIMARY KEY (resource, fence, seq)
){clustered};
CREATE INDEX {p}receipts_by_operation ON {p}receipts (resource, operation_id);
CREATE TABLE {p}quarantine (
  id {serial},
  resource TEXT NOT NULL,
  fence BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  operation_id TEXT NOT NULL,
  payload_digest TEXT NOT NULL,
  grant_digest TEXT NOT NULL,
  original_receipt TEXT NOT NULL,
  reason TEXT NOT NULL,
  recorded_at_ms BIGINT NOT NULL
);
CREATE TABLE {p}alarms (
  id {serial},
  resource TEXT NOT NULL,
  kind TEXT NOT NULL,
  fence BIGINT NOT NULL,
  highest_fence BIGINT NOT NULL,
  grant_digest TEXT NOT NULL,
  detail TEXT NOT NULL,
  raised_at_ms BIGINT NOT NULL
);
CREATE TABLE {p}shadow_log (
  id {serial},
  resource TEXT NOT NULL,
  fence BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  operation_id TEXT NOT NULL,
  outcome TEXT NOT NULL,
  reason TEXT NOT NULL,
  at_ms BIGINT NOT NULL
);
CREATE TABLE {p}operator_actions (
  id {serial},
  subject TEXT NOT NULL,
  action TEXT NOT NULL,
  operator TEXT NOT NULL,
  detail TEXT NOT NULL,
  at_ms BIGINT NOT NULL
);
CREATE TABLE {p}protected (
  table_name TEXT PRIMARY KEY,
  mode TEXT NOT NULL,
  ungated BIGINT NOT NULL DEFAULT 0
);
{guard}`,
	// 2: the database itself refuses what the gate never does: lowering
	// highest_fence, and updating or deleting a receipt (PROVEN_ABSENT
	// relies on receipts never disappearing).
	2: `{invariants}`,
	// 3: one statement finishes an accept (SQLite: a write-only view whose
	// INSTEAD OF trigger clears the guard marker, stores the fence state
	// and inserts the receipt; PostgreSQL already does it with a CTE).
	3: `{accept}`,
	// 4: only the first segment of each fence is indexed by operation ID
	// (a partial index), so a later segment writes one B-tree fewer. Every
	// receipt's fence holds that first segment under the same operation,
	// because the gate accepts seq 1 to open a fence and then only
	// lastSegmentSeq+1 under the same root; the chain trigger makes the
	// database refuse a receipt whose previous segment is missing, so the
	// operation query (first segments → their fences' receipts) stays
	// complete, which PROVEN_ABSENT relies on. The predicate is "seq < 2"
	// (seq is at least 1), not "seq = 1": SQLite recompiles a statement
	// on every new binding of a parameter compared by equality with a
	// partial index's column (seq = ? against seq = 1 could imply it),
	// which made every fence-row read re-parse.
	4: `CREATE INDEX {p}receipts_first_by_operation ON {p}receipts (resource, operation_id) WHERE seq < 2;
DROP INDEX {p}receipts_by_operation;
{segmentChain}`,
	// 5: the compact layout (Dialect.compact): 32-byte digests, receipts
	// without their ID and outcome (the ID is the digest of the rest, the
	// outcome always ACCEPTED), and the fence state where the dialect's
	// locking keeps it current — SQLite derives it from the last receipt,
	// so an accept writes one page fewer; PostgreSQL keeps it, now with
	// the last grant, in the locked resource row.
	5: `{compact}`,
	// 6: issue times for the regression rule (Dialect.issueTimes): the
	// grant at highestFence keeps its IssuedAt, and Resume records the
	// floor it was given and when.
	6: `{issueTimes}`,
	// 7: PostgreSQL checks segment order on the fence row instead of on
	// each receipt (Dialect.stateInOrder): every accept moves the row and
	// inserts its receipt in one statement with the same fence, segment
	// and root, and the row's trigger, whose condition PostgreSQL
	// evaluates without a function call, refuses a move the gate never
	// makes; one PL/pgSQL call less per accept. A receipt inserted
	// directly, bypassing the row, is no longer checked. SQLite keeps
	// migration 4's trigger (nothing here).
	7: `{stateInOrder}`,
	// 8: the database's refusals without one that another implies
	// (Dialect.dropImplied): on PostgreSQL, migration 7's order check
	// refuses a lower fence, so migration 2's trigger for it goes. SQLite
	// dropped its own in migration 5 (nothing here).
	8: `{dropImplied}`,
	// 9: the coverage guard admits a protected row only under an accept
	// of the row's own resource in the same transaction
	// (Dialect.guardRows): PostgreSQL marks each receipt with its
	// transaction, and the receipt is the mark; SQLite's mark names the
	// resource and can never be committed. Protected tables record what
	// names a row's resource (the column resource, until protected again
	// with another); Gate.reguard then reinstalls every guard.
	9: `{guardRows}`,
	// 10: PostgreSQL holds migration 7's order rule in a PL/pgSQL trigger
	// function fired after the row update (Dialect.orderInFunction), in
	// place of the WHEN clause that PostgreSQL rebuilt from its text for
	// every statement: the same refusals, a plan cached per session, and
	// no row lock taken for a BEFORE trigger. SQLite keeps migration 4's
	// trigger (nothing here).
	10: `{orderInFunction}`,
}

// guardRowsVersion is the migration after whose DDL every protected
// table's guard is reinstalled (Gate.reguard).
const guardRowsVersion = 9

// SchemaVersion is the schema version this package migrates to.
func SchemaVersion() int { return len(migrations) - 1 }

// Migrate creates or upgrades the gate's tables to SchemaVersion and
// prepares the gate's statements on db. Call it once at start, before the
// first Apply; transactions given to Apply must come from db. It is safe
// to call from several processes at once (on PostgreSQL it takes a
// transaction-level advisory lock; on SQLite the write lock serializes).
func (g *Gate) Migrate(ctx context.Context, db *sql.DB) error {
	if err := g.migrateUpTo(ctx, db, SchemaVersion()); err != nil {
		return err
	}
	return g.prepare(ctx, db)
}

// migrateUpTo applies the migrations not yet applied, up to version max.
func (g *Gate) migrateUpTo(ctx context.Context, db *sql.DB, max int) error {
	if _, err := db.ExecContext(ctx, g.q(`CREATE TABLE IF NOT EXISTS {p}schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms BIGINT NOT NULL)`)); err != nil {
		return fmt.Errorf("sqlgate: migrate: %w", err)
	}
	for v := 1; v <= max; v++ {
		if err := g.migrateTo(ctx, db, v); err != nil {
			return fmt.Errorf("sqlgate: migrate to version %d: %w", v, err)
		}
	}
	return nil
}

func (g *Gate) migrateTo(ctx context.Context, db *sql.DB, v int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if g.d == Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, g.prefix+"schema"); err != nil {
			return err
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, g.q(`SELECT count(*) FROM {p}schema_migrations WHERE version = $1`), v).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	ddl := strings.NewReplacer("{serial}", g.d.serial, "{guard}", g.d.guardSetup, "{clustered}", g.d.clustered, "{invariants}", g.d.invariants, "{accept}", g.d.acceptEntry, "{segmentChain}", g.d.segmentChain, "{compact}", g.d.compact, "{issueTimes}", g.d.issueTimes, "{stateInOrder}", g.d.stateInOrder, "{dropImplied}", g.d.dropImplied, "{guardRows}", g.d.guardRows, "{orderInFunction}", g.d.orderInFunction).Replace(migrations[v])
	for _, stmt := range splitStatements(g.q(ddl)) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%w\n%s", err, stmt)
		}
	}
	if v == guardRowsVersion {
		if err := g.reguard(ctx, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, g.q(`INSERT INTO {p}schema_migrations (version, applied_at_ms) VALUES ($1, $2)`), v, g.nowMs()); err != nil {
		return err
	}
	return tx.Commit()
}

// splitStatements splits DDL on ";\n" at line ends outside $fg$ bodies.
func splitStatements(ddl string) []string {
	var out []string
	var cur strings.Builder
	inBody := false
	for _, line := range strings.SplitAfter(ddl, "\n") {
		if strings.Count(line, "$fg$")%2 == 1 {
			inBody = !inBody
		}
		cur.WriteString(line)
		if !inBody && strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
