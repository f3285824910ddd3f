package sqlgate

import (
	"strings"
)

// SQLite is the dialect for modernc.org/sqlite (the embedded default).
// SQLite serializes all writers: applies on different resources do not
// deadlock but do queue behind one another. Open the database with
// OpenSQLite (or _txlock=immediate, WAL and a busy timeout) so that
// transactions take the write lock at BEGIN.
//
// The fence state is the resource's last receipt (schema 5): with the
// write lock taken at BEGIN, that read is current, and an unguarded
// accept writes two pages (the business row's and the receipt's) where a
// plain write writes one. The database still refuses a receipt that does
// not follow its resource's last one, so highestFence cannot go down.
var SQLite = &Dialect{
	name:         "sqlite",
	placeholders: func(q string) string { return strings.ReplaceAll(q, "$", "?") },
	stateCols: `r.resource, r.mode, coalesce(l.fence, 0), l.operation_root, coalesce(l.seq, 0), l.grant_digest,
  r.min_policy_generation, r.paused, r.paused_reason, coalesce(l.grant_issued_at_ms, 0), r.fence_floor, r.floor_at_ms`,
	// The last receipt's key is the primary key (resource, fence, seq)
	// read backwards (one seek, evaluated once: it names only $1); the
	// join then fetches that receipt by its whole key. A join on a
	// subquery with ORDER BY … LIMIT would be materialized into a
	// temporary b-tree on every execution (about 1 µs more).
	stateFrom: `{p}resources r LEFT JOIN {p}receipts l ON l.resource = r.resource
  AND (l.fence, l.seq) = (SELECT fence, seq FROM {p}receipts WHERE resource = $1 ORDER BY fence DESC, seq DESC LIMIT 1)`,
	serial: "INTEGER PRIMARY KEY",
	// WITHOUT ROWID: receipts live in their primary-key b-tree, one page
	// write per receipt instead of two.
	clustered: " WITHOUT ROWID",
	// The mark is a gate-owned row of apply_marks (migration 9) naming the
	// accepted resource, which exists only between mark and finishAccept
	// inside one transaction: SQLite has one writer at a time, so no other
	// connection's write can see it, and a deferred foreign key fails any
	// commit that still holds one. It is only written when some table is
	// protected, which guardProbe reads with the fence row under the same
	// write lock (Protect cannot slip in between), so an apply where no
	// table is protected runs no marker statement at all.
	mark:       "INSERT INTO {p}apply_marks (resource, enforce) VALUES ($1, $2) ON CONFLICT (resource) DO NOTHING",
	guardProbe: ", EXISTS (SELECT 1 FROM {p}protected)",
	// Through the write-only view of migration 5, whose INSTEAD OF trigger
	// reads and deletes the marker, adds its count to the resource (only
	// when the business change wrote a protected row) and inserts the
	// receipt, in one VM program.
	finishAccept: `INSERT INTO {p}accept (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode, grant_issued_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
	finishAcceptUnguarded: `INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode, grant_issued_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
	fastStore: sqliteFastStore,
	acceptEntry: `CREATE VIEW {p}accept AS SELECT NULL AS resource, NULL AS highest_fence, NULL AS root, NULL AS last_seq, NULL AS id, NULL AS fence,
  NULL AS operation_root, NULL AS operation_id, NULL AS seq, NULL AS payload_digest, NULL AS grant_digest, NULL AS accepted_at_ms, NULL AS mode, NULL AS outcome WHERE 0;
CREATE TRIGGER {p}accept_insert INSTEAD OF INSERT ON {p}accept BEGIN
  UPDATE {p}resources SET highest_fence = NEW.highest_fence, root = NEW.root, last_seq = NEW.last_seq,
    gated_writes = gated_writes + coalesce((SELECT writes FROM {p}apply_marker WHERE id = 1), 0) WHERE resource = NEW.resource
  ; DELETE FROM {p}apply_marker WHERE id = 1
  ; INSERT INTO {p}receipts (id, resource, fence, operation_root, operation_id, seq, payload_digest, grant_digest, accepted_at_ms, mode, outcome)
    VALUES (NEW.id, NEW.resource, NEW.fence, NEW.operation_root, NEW.operation_id, NEW.seq, NEW.payload_digest, NEW.grant_digest, NEW.accepted_at_ms, NEW.mode, NEW.outcome)
  ; END;`,
	segmentChain: sqliteSegmentChain,
	// Migration 1's mark: one row for any accept, whatever its resource
	// (migration 9 replaces it).
	guardSetup:     "CREATE TABLE {p}apply_marker (id INTEGER PRIMARY KEY CHECK (id = 1), writes INTEGER NOT NULL)",
	guard:          sqliteGuard,
	guardRows:      sqliteGuardRows,
	dropGuardSetup: "DROP TABLE {p}apply_marker;",
	invariants: `CREATE TRIGGER {p}fence_never_decreases BEFORE UPDATE OF highest_fence ON {p}resources WHEN NEW.highest_fence < OLD.highest_fence BEGIN SELECT RAISE(ABORT, 'fencegate: highest_fence never decreases'); END;
` + sqliteReceiptsImmutable,
	compact:    sqliteCompact,
	issueTimes: sqliteIssueTimes,
}

// sqliteFastStore is Dialect.fastStore: the receipt, inserted where the
// resource row and the resource's last receipt (the fence state) hold
// the given columns and no table is protected (an accept it stores comes
// before the business change, with no mark). The last receipt is the
// primary key read backwards, one seek in its WITHOUT ROWID b-tree; a
// resource without one stores nothing here. Under the write lock that
// BEGIN IMMEDIATE took, nothing changes between this compare and the
// insert, whose triggers still refuse a receipt out of order.
const sqliteFastStore = `INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode, grant_issued_at_ms)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 FROM {p}resources r
WHERE r.resource = $1 AND r.mode = $11 AND r.min_policy_generation = $16 AND r.paused = $17 AND r.paused_reason = $18
  AND r.fence_floor = $20 AND r.floor_at_ms = $21
  AND (SELECT fence, operation_root, seq, grant_digest, grant_issued_at_ms FROM {p}receipts WHERE resource = $1 ORDER BY fence DESC, seq DESC LIMIT 1)
    = ($12, $13, $14, $15, $19)
  AND NOT EXISTS (SELECT 1 FROM {p}protected)`

// sqliteReceiptsImmutable (migration 2, again in 5 on the rebuilt table)
// refuses any change to a receipt.
const sqliteReceiptsImmutable = `CREATE TRIGGER {p}receipts_never_updated BEFORE UPDATE ON {p}receipts BEGIN SELECT RAISE(ABORT, 'fencegate: receipts are never updated or deleted'); END;
CREATE TRIGGER {p}receipts_never_deleted BEFORE DELETE ON {p}receipts BEGIN SELECT RAISE(ABORT, 'fencegate: receipts are never updated or deleted'); END;`

// sqliteSegmentChain (migration 4, again in 5) refuses a receipt whose
// previous segment is missing.
const sqliteSegmentChain = `CREATE TRIGGER {p}receipts_segment_chain BEFORE INSERT ON {p}receipts WHEN NEW.seq > 1 AND NOT EXISTS (SELECT 1 FROM {p}receipts WHERE resource = NEW.resource AND fence = NEW.fence AND seq = NEW.seq - 1 AND operation_id = NEW.operation_id) BEGIN SELECT RAISE(ABORT, 'fencegate: a receipt needs its previous segment under the same fence and operation'); END;`

// sqliteCompact is SQLite's migration 5. It first proves that every
// resource's stored fence state is its last receipt's (the CHECK of a
// temporary table fails the migration otherwise: such a database was
// written outside the gate and needs an operator), then rebuilds the
// receipts with 32-byte digests, re-creates their invariant triggers plus
// one refusing a receipt that does not follow its resource's last, and
// drops the resource columns the receipts now hold.
const sqliteCompact = `DROP VIEW {p}accept;
CREATE TEMP TABLE {p}v5_check (resources_whose_fence_state_is_not_their_last_receipt INTEGER CHECK (resources_whose_fence_state_is_not_their_last_receipt = 0));
INSERT INTO {p}v5_check SELECT count(*) FROM {p}resources r LEFT JOIN {p}receipts l ON l.resource = r.resource
    AND (l.fence, l.seq) = (SELECT fence, seq FROM {p}receipts WHERE resource = r.resource ORDER BY fence DESC, seq DESC LIMIT 1)
  WHERE r.highest_fence != coalesce(l.fence, 0) OR r.last_seq != coalesce(l.seq, 0) OR r.root != coalesce(l.operation_root, '');
DROP TABLE {p}v5_check;
CREATE TABLE {p}receipts_v5 (
  resource TEXT NOT NULL,
  fence BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  operation_id TEXT NOT NULL,
  operation_root BLOB NOT NULL CHECK (length(operation_root) = 32),
  payload_digest BLOB NOT NULL CHECK (length(payload_digest) = 32),
  grant_digest BLOB NOT NULL CHECK (length(grant_digest) = 32),
  accepted_at_ms BIGINT NOT NULL,
  mode TEXT NOT NULL,
  PRIMARY KEY (resource, fence, seq)
) WITHOUT ROWID;
INSERT INTO {p}receipts_v5 SELECT resource, fence, seq, operation_id, unhex(substr(operation_root, 8)), unhex(substr(payload_digest, 8)),
  unhex(substr(grant_digest, 8)), accepted_at_ms, mode FROM {p}receipts ORDER BY resource, fence, seq;
DROP TABLE {p}receipts;
ALTER TABLE {p}receipts_v5 RENAME TO {p}receipts;
CREATE INDEX {p}receipts_first_by_operation ON {p}receipts (resource, operation_id) WHERE seq < 2;
` + sqliteReceiptsImmutable + `
CREATE TRIGGER {p}receipts_follow_last BEFORE INSERT ON {p}receipts WHEN EXISTS (SELECT 1 FROM (SELECT fence, seq FROM {p}receipts WHERE resource = NEW.resource ORDER BY fence DESC, seq DESC LIMIT 1) WHERE fence > NEW.fence OR fence = NEW.fence AND seq >= NEW.seq) BEGIN SELECT RAISE(ABORT, 'fencegate: highest fence never decreases: a receipt must follow its resource''s last'); END;
` + sqliteSegmentChain + `
DROP TRIGGER {p}fence_never_decreases;
ALTER TABLE {p}resources DROP COLUMN highest_fence;
ALTER TABLE {p}resources DROP COLUMN root;
ALTER TABLE {p}resources DROP COLUMN last_seq;
CREATE VIEW {p}accept AS SELECT NULL AS resource, NULL AS fence, NULL AS seq, NULL AS operation_id, NULL AS operation_root,
  NULL AS payload_digest, NULL AS grant_digest, NULL AS accepted_at_ms, NULL AS mode WHERE 0;
CREATE TRIGGER {p}accept_insert INSTEAD OF INSERT ON {p}accept BEGIN
  UPDATE {p}resources SET gated_writes = gated_writes + (SELECT writes FROM {p}apply_marker WHERE id = 1)
    WHERE resource = NEW.resource AND (SELECT writes FROM {p}apply_marker WHERE id = 1) > 0
  ; DELETE FROM {p}apply_marker WHERE id = 1
  ; INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
    VALUES (NEW.resource, NEW.fence, NEW.seq, NEW.operation_id, NEW.operation_root, NEW.payload_digest, NEW.grant_digest, NEW.accepted_at_ms, NEW.mode)
  ; END;`

// sqliteIssueTimes is SQLite's migration 6: each receipt keeps its
// grant's IssuedAt (the fence state is the last receipt, so the issue time
// of the grant at highestFence comes with it), the accept view takes it,
// and the resource row keeps the floor and instant of the last Resume.
// Receipts from before have 0: unknown, which the regression rule treats
// as ambiguous until the next grant's first accept.
const sqliteIssueTimes = `ALTER TABLE {p}receipts ADD COLUMN grant_issued_at_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE {p}resources ADD COLUMN fence_floor BIGINT NOT NULL DEFAULT 0;
ALTER TABLE {p}resources ADD COLUMN floor_at_ms BIGINT NOT NULL DEFAULT 0;
DROP VIEW {p}accept;
CREATE VIEW {p}accept AS SELECT NULL AS resource, NULL AS fence, NULL AS seq, NULL AS operation_id, NULL AS operation_root,
  NULL AS payload_digest, NULL AS grant_digest, NULL AS accepted_at_ms, NULL AS mode, NULL AS grant_issued_at_ms WHERE 0;
CREATE TRIGGER {p}accept_insert INSTEAD OF INSERT ON {p}accept BEGIN
  UPDATE {p}resources SET gated_writes = gated_writes + (SELECT writes FROM {p}apply_marker WHERE id = 1)
    WHERE resource = NEW.resource AND (SELECT writes FROM {p}apply_marker WHERE id = 1) > 0
  ; DELETE FROM {p}apply_marker WHERE id = 1
  ; INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode, grant_issued_at_ms)
    VALUES (NEW.resource, NEW.fence, NEW.seq, NEW.operation_id, NEW.operation_root, NEW.payload_digest, NEW.grant_digest, NEW.accepted_at_ms, NEW.mode, NEW.grant_issued_at_ms)
  ; END;`

// sqliteGuardRows is SQLite's migration 9: the mark names the accepted
// resource and whether its accept was in enforce mode (apply_marks
// replaces migration 1's single apply_marker row); a mark that would
// outlive its transaction fails the commit (a deferred foreign key to a
// table that is always empty), and cannot be written on a connection
// without foreign keys (which would not check it); the accept entry
// counts and deletes the mark of its own resource; a protected table
// records the column or expression naming its rows' resource. Then
// Gate.reguard reinstalls every protected table's guard (sqliteGuard).
const sqliteGuardRows = `CREATE TABLE {p}never_committed (id INTEGER PRIMARY KEY);
CREATE TABLE {p}apply_marks (
  resource TEXT PRIMARY KEY,
  enforce INTEGER NOT NULL,
  writes INTEGER NOT NULL DEFAULT 0,
  uncommitted INTEGER NOT NULL DEFAULT 0 REFERENCES {p}never_committed (id) DEFERRABLE INITIALLY DEFERRED
) WITHOUT ROWID;
CREATE TRIGGER {p}apply_marks_need_foreign_keys BEFORE INSERT ON {p}apply_marks WHEN (SELECT foreign_keys FROM pragma_foreign_keys) = 0
  BEGIN SELECT RAISE(ABORT, 'fencegate: the coverage guard needs PRAGMA foreign_keys = ON on this connection (sqlgate.OpenSQLite sets it)'); END;
ALTER TABLE {p}protected ADD COLUMN resource_expr TEXT NOT NULL DEFAULT 'resource';
DROP TRIGGER {p}accept_insert;
CREATE TRIGGER {p}accept_insert INSTEAD OF INSERT ON {p}accept BEGIN
  UPDATE {p}resources SET gated_writes = gated_writes + (SELECT writes FROM {p}apply_marks WHERE resource = NEW.resource)
    WHERE resource = NEW.resource AND (SELECT writes FROM {p}apply_marks WHERE resource = NEW.resource) > 0
  ; DELETE FROM {p}apply_marks WHERE resource = NEW.resource
  ; INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode, grant_issued_at_ms)
    VALUES (NEW.resource, NEW.fence, NEW.seq, NEW.operation_id, NEW.operation_root, NEW.payload_digest, NEW.grant_digest, NEW.accepted_at_ms, NEW.mode, NEW.grant_issued_at_ms)
  ; END;`
