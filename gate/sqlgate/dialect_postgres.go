package sqlgate

// Postgres is the dialect for PostgreSQL through pgx/v5/stdlib. Applies
// lock the resource's fence row (SELECT … FOR UPDATE), so applies on one
// resource serialize and applies on different resources do not block each
// other. Use READ COMMITTED (the default) transactions.
//
// The fence state, the last accepted grant included (schema 5), lives in
// the locked row: after a wait for the lock, READ COMMITTED returns the
// row's latest version, while a receipt committed meanwhile can be
// missing from the statement's snapshot.
var Postgres = &Dialect{
	name:         "postgres",
	placeholders: func(q string) string { return q },
	forUpdate:    " FOR UPDATE OF r",
	stateCols: `r.resource, r.mode, r.highest_fence, r.root, r.last_seq, r.last_grant, r.min_policy_generation, r.paused, r.paused_reason,
  r.last_grant_issued_at_ms, r.fence_floor, r.floor_at_ms`,
	stateFrom:       `{p}resources r`,
	guardProbe:      ", EXISTS (SELECT 1 FROM {p}protected)",
	storesMarkFirst: true,
	finishAccept: `WITH u AS (UPDATE {p}resources SET highest_fence = $2, root = $5, last_seq = $3, last_grant = $7, last_grant_issued_at_ms = $10
  WHERE resource = $1)
INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
	speculate:      postgresSpeculate,
	speculateStore: postgresSpeculateStore,
	fastStore:      postgresFastStore,
	serial:         "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	segmentChain: `CREATE OR REPLACE FUNCTION {p}segment_chain() RETURNS trigger LANGUAGE plpgsql AS $fg$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM {p}receipts WHERE resource = NEW.resource AND fence = NEW.fence AND seq = NEW.seq - 1 AND operation_id = NEW.operation_id) THEN
    RAISE EXCEPTION 'fencegate: a receipt needs its previous segment under the same fence and operation' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $fg$;
CREATE TRIGGER {p}receipts_segment_chain BEFORE INSERT ON {p}receipts FOR EACH ROW WHEN (NEW.seq > 1) EXECUTE FUNCTION {p}segment_chain();`,
	// Migration 1's guard: a transaction-local setting as the mark, which
	// any statement could set (migration 9 replaces it).
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
	compact:         postgresCompact,
	issueTimes:      postgresIssueTimes,
	stateInOrder:    postgresStateInOrder,
	dropImplied:     postgresDropImplied,
	orderInFunction: postgresOrderInFunction,
	guard:           postgresGuard,
	guardRows:       postgresGuardRows,
	dropGuardSetup:  `DROP FUNCTION {p}guard();`,
}

// postgresGuardRows is PostgreSQL's migration 9. Each receipt keeps the
// ID of the transaction that stored it (xid8, which never wraps; NULL
// for receipts from before): the guard of a protected table admits a
// row when its resource's last receipt, the one at the fence row's state,
// was stored by the writing transaction — a mark no setting creates,
// that names its resource, and that lives exactly as long as that
// transaction (Gate.reguard then reinstalls every protected table's
// guard that way; postgresGuard). A protected table records the column or
// expression naming its rows' resource.
const postgresGuardRows = `ALTER TABLE {p}receipts ADD COLUMN xid xid8;
ALTER TABLE {p}receipts ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
ALTER TABLE {p}protected ADD COLUMN resource_expr TEXT NOT NULL DEFAULT 'resource';`

// postgresCompact is PostgreSQL's migration 5: the last accepted grant
// moves into the resource row, digests become 32-byte bytea, and receipts
// lose the columns they imply (ID, the digest of the rest; outcome,
// always ACCEPTED). ALTER … TYPE fires no row trigger, so the receipts'
// invariant triggers stay as they are.
const postgresCompact = `ALTER TABLE {p}resources ADD COLUMN last_grant BYTEA NOT NULL DEFAULT ''::bytea;
UPDATE {p}resources r SET last_grant = decode(substr(c.grant_digest, 8), 'hex') FROM {p}receipts c
  WHERE c.resource = r.resource AND c.fence = r.highest_fence AND c.seq = r.last_seq;
ALTER TABLE {p}resources ALTER COLUMN root DROP DEFAULT, ALTER COLUMN root TYPE BYTEA USING decode(substr(root, 8), 'hex'),
  ALTER COLUMN root SET DEFAULT ''::bytea;
ALTER TABLE {p}receipts DROP COLUMN id, DROP COLUMN outcome,
  ALTER COLUMN operation_root TYPE BYTEA USING decode(substr(operation_root, 8), 'hex'),
  ALTER COLUMN payload_digest TYPE BYTEA USING decode(substr(payload_digest, 8), 'hex'),
  ALTER COLUMN grant_digest TYPE BYTEA USING decode(substr(grant_digest, 8), 'hex');`

// postgresAdmits is where the speculative statements store an accept,
// judged on the locked resource row s: gate.Decide is certain to accept
// once the status is proven (see Dialect.speculate). $12 is the skew bound
// in ms: a higher fence whose grant was issued more than that long before
// the grant at highest is a regression (gate/regression.go), never stored.
const postgresAdmits = `s.mode = 'enforce' AND s.paused = 0 AND s.min_policy_generation <= $10
    AND s.fence_floor < $2
    AND (s.highest_fence < $2 AND $3 = 1 AND NOT (s.last_grant_issued_at_ms <> 0 AND $11::bigint + $12::bigint < s.last_grant_issued_at_ms)
      OR s.highest_fence = $2 AND s.root = $5 AND (s.last_grant = ''::bytea OR s.last_grant = $7) AND s.last_seq + 1 = $3)`

// postgresSpeculate locks and reads the fence row as lockLookup does (s,
// with its guard probe) and, where the locked state admits the accept,
// stores it (u, i).
// After a wait for the lock, FOR UPDATE returns the row's latest version,
// and u's UPDATE re-checks its condition against that version too, so the
// condition is judged on current state, never on the statement's older
// snapshot. The receipt's mode is $9, 'enforce': u requires it.
const postgresSpeculate = `WITH s AS (
  SELECT r.resource, r.mode, r.highest_fence, r.root, r.last_seq, r.last_grant, r.min_policy_generation, r.paused, r.paused_reason,
    r.last_grant_issued_at_ms, r.fence_floor, r.floor_at_ms
  FROM {p}resources r WHERE r.resource = $1 FOR UPDATE OF r),
u AS (
  UPDATE {p}resources p SET highest_fence = $2, root = $5, last_seq = $3, last_grant = $7, last_grant_issued_at_ms = $11 FROM s
  WHERE p.resource = s.resource AND ` + postgresAdmits + `
  RETURNING p.resource),
i AS (
  INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
  SELECT u.resource, $2, $3, $4, $5, $6, $7, $8, $9 FROM u RETURNING 1)
SELECT s.resource, s.mode, s.highest_fence, s.root, s.last_seq, s.last_grant, s.min_policy_generation, s.paused, s.paused_reason,
  s.last_grant_issued_at_ms, s.fence_floor, s.floor_at_ms, EXISTS (SELECT 1 FROM {p}protected), (SELECT count(*) FROM i) FROM s`

// postgresSpeculateStore is postgresSpeculate's storing half, for a
// transaction that pipelines it behind lockLookup: that statement has
// locked the row, so this one (a later statement of the same READ
// COMMITTED transaction, on a newer snapshot) judges the same condition
// on the same, current row version, and stores where it admits the
// accept. It stores nothing unless that statement locked the row: the
// row version it sees must carry this transaction's lock (xmax, the
// transaction's own ID; Run's transaction has no savepoint). Without the
// check, a row another transaction created after the lock statement
// found none would be updated here unlocked-and-unread, and the retried
// lookup would find this very accept. (Until schema 9 the check was a
// setting the lock statement set, which a session could have set
// beforehand.) Its row count is the receipts it inserted, 0 or 1.
const postgresSpeculateStore = `WITH u AS (
  UPDATE {p}resources s SET highest_fence = $2, root = $5, last_seq = $3, last_grant = $7, last_grant_issued_at_ms = $11
  WHERE s.resource = $1 AND s.xmax = pg_current_xact_id()::xid AND ` + postgresAdmits + `
  RETURNING s.resource)
INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
SELECT u.resource, $2, $3, $4, $5, $6, $7, $8, $9 FROM u`

// postgresFastStore is Dialect.fastStore: the resource row moved to the
// accept's state where it holds the given columns, and the receipt
// inserted where it moved — the receipt peer's statement (the fence
// UPDATE and the receipt INSERT in one), its condition widened to the
// whole state. In READ COMMITTED an UPDATE that waited for the row lock
// judges its condition again on the row's latest version, so the compare
// is with the current state, and a row it does not update stays
// unlocked. The stored receipt is the coverage guard's mark, as a
// speculation's is.
const postgresFastStore = `WITH u AS (
  UPDATE {p}resources s SET highest_fence = $2, root = $5, last_seq = $3, last_grant = $7, last_grant_issued_at_ms = $10
  WHERE s.resource = $1 AND s.mode = $11 AND s.highest_fence = $12 AND s.root = $13 AND s.last_seq = $14 AND s.last_grant = $15
    AND s.min_policy_generation = $16 AND s.paused = $17 AND s.paused_reason = $18 AND s.last_grant_issued_at_ms = $19
    AND s.fence_floor = $20 AND s.floor_at_ms = $21
  RETURNING s.resource)
INSERT INTO {p}receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
SELECT u.resource, $2, $3, $4, $5, $6, $7, $8, $9 FROM u`

// postgresIssueTimes is PostgreSQL's migration 6: the resource row keeps
// the IssuedAt of the grant at highestFence (0 = unknown, from before) and
// the floor and instant of the last Resume.
const postgresIssueTimes = `ALTER TABLE {p}resources ADD COLUMN last_grant_issued_at_ms BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN fence_floor BIGINT NOT NULL DEFAULT 0, ADD COLUMN floor_at_ms BIGINT NOT NULL DEFAULT 0;`

// postgresStateInOrder is PostgreSQL's migration 7. The receipt trigger of
// migration 4 called a PL/pgSQL function for every receipt after a fence's
// first (20–30 µs of the store statement's 60–75, EXPLAIN ANALYZE); it
// goes. In its place the fence row refuses any move of (highest_fence,
// last_seq) that is not segment 1 of a higher fence or the next segment
// under the same fence and root, in a trigger whose WHEN clause
// PostgreSQL evaluates inline (the function runs only to refuse). The
// clause is kept to that rule because its cost grows with its size: it is
// compiled on every execution of the statement (about 10 µs as written;
// with the floor, pause, grant and digest-length conditions too, 24 µs).
// Every accept the gate stores moves this row and inserts its receipt in
// one statement with the same fence, segment and root, so a receipt
// stored through the gate has its predecessor; a receipt inserted
// directly, bypassing the row, is no longer checked.
const postgresStateInOrder = `DROP TRIGGER {p}receipts_segment_chain ON {p}receipts;
DROP FUNCTION {p}segment_chain();
CREATE TRIGGER {p}fence_state_in_order BEFORE UPDATE OF highest_fence, root, last_seq ON {p}resources FOR EACH ROW
  WHEN (NOT (NEW.highest_fence > OLD.highest_fence AND NEW.last_seq = 1
    OR NEW.highest_fence = OLD.highest_fence AND NEW.root = OLD.root AND NEW.last_seq = OLD.last_seq + 1))
  EXECUTE FUNCTION {p}refuse('the fence state moves only to segment 1 of a higher fence or to the next segment under the same fence and root');`

// postgresDropImplied is PostgreSQL's migration 8. Migration 2's
// fence_never_decreases refuses an update that lowers highest_fence;
// migration 7's fence_state_in_order refuses every move of the fence
// state other than segment 1 of a higher fence or the next segment under
// the same fence and root, a lower fence among them, and fires on the
// same updates (it lists highest_fence too). PostgreSQL rebuilds a
// trigger's WHEN clause from its stored text for every statement that
// fires it, so the first trigger cost every accept for nothing
// (docs/performance.md, "A receipt row beside the peer").
const postgresDropImplied = `DROP TRIGGER {p}fence_never_decreases ON {p}resources;`

// postgresOrderInFunction is PostgreSQL's migration 10: migration 7's rule
// (the fence state moves only to segment 1 of a higher fence or to the
// next segment under the same fence and root), refused by the same
// trigger name on the same updates, but checked in a PL/pgSQL function
// fired for each row after the update instead of in a WHEN clause.
// PostgreSQL rebuilds a WHEN clause from its stored text (parse, plan,
// expression setup) for every statement that fires it: about 11 µs of
// the fast store's server time against 5 for the function, whose
// expression PL/pgSQL plans once per session (docs/performance.md). An
// AFTER trigger also spares the row lock a BEFORE row trigger takes
// before an update that did not lock it (54 bytes of WAL a write); its
// exception aborts the statement all the same, before anything of it is
// visible. A receipt inserted directly, bypassing the row, is still not
// checked (as since schema 7).
const postgresOrderInFunction = `DROP TRIGGER {p}fence_state_in_order ON {p}resources;
CREATE FUNCTION {p}fence_state_in_order() RETURNS trigger LANGUAGE plpgsql AS $fg$
BEGIN
  IF NOT (NEW.highest_fence > OLD.highest_fence AND NEW.last_seq = 1
    OR NEW.highest_fence = OLD.highest_fence AND NEW.root = OLD.root AND NEW.last_seq = OLD.last_seq + 1) THEN
    RAISE EXCEPTION 'fencegate: the fence state moves only to segment 1 of a higher fence or to the next segment under the same fence and root'
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NULL;
END $fg$;
CREATE TRIGGER {p}fence_state_in_order AFTER UPDATE OF highest_fence, root, last_seq ON {p}resources FOR EACH ROW
  EXECUTE FUNCTION {p}fence_state_in_order();`
