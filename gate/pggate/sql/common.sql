-- The gate inside PostgreSQL, what every part uses: the gate's clock,
-- instants and digests as text, and how a rejection or a refusal is
-- raised.
--
-- The source of the gate is this file and the others beside it, one
-- concern each, run in the order install.go lists them: parse.sql,
-- authenticate.sql, decide.sql, apply.sql, operate.sql, key_history.sql,
-- guard.sql, then privileges.sql. Each function is defined once, here;
-- every install and every upgrade creates them all again after the
-- schema's migrations (migrations/), so what you read is what the
-- database runs. A CREATE TYPE is created when missing and created again
-- (with the functions that take it) when its attributes changed; a
-- CREATE TRIGGER is created when its table has no trigger of that name
-- (give a changed trigger a new name); a function no longer here is
-- dropped. {crypto} is the schema pgcrypto lives in.

-- now_ms is the gate's clock: the database server's, in Unix milliseconds
-- (truncated), unless a test set settings.clock_ms.
CREATE OR REPLACE FUNCTION fencegate.now_ms() RETURNS BIGINT LANGUAGE plpgsql STABLE AS $fg$
BEGIN
  RETURN fencegate.clock_at((SELECT clock_ms FROM fencegate.settings));
END $fg$;

-- clock_at is now_ms for a caller that has read settings.clock_ms
-- already (apply reads the settings once a write).
CREATE OR REPLACE FUNCTION fencegate.clock_at(set_ms BIGINT) RETURNS BIGINT LANGUAGE plpgsql STABLE AS $fg$
BEGIN
  RETURN coalesce(set_ms, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
END $fg$;

-- stamp formats Unix milliseconds as grant.TimeLayout; NULL is 'unknown'.
CREATE OR REPLACE FUNCTION fencegate.stamp(ms BIGINT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN CASE WHEN ms IS NULL THEN 'unknown'
    ELSE to_char((timestamp '1970-01-01' + ms * interval '1 millisecond'), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END;
END $fg$;

-- digest_text is a SHA-256 digest as package grant writes it.
CREATE OR REPLACE FUNCTION fencegate.digest_text(b BYTEA) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT 'sha256:' || encode(b, 'hex')
$fg$;

-- sqlstate is the SQLSTATE of an outcome (docs/formats.md lists them).
CREATE OR REPLACE FUNCTION fencegate.sqlstate(outcome TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE outcome
    WHEN 'REPLAYED' THEN 'FG100'
    WHEN 'MALFORMED' THEN 'FG001' WHEN 'BAD_PROOF' THEN 'FG002' WHEN 'BINDING_MISMATCH' THEN 'FG003'
    WHEN 'IDENTITY_MISMATCH' THEN 'FG004' WHEN 'NOT_HELD' THEN 'FG005' WHEN 'EPOCH_REVOKED' THEN 'FG006'
    WHEN 'POLICY_STALE' THEN 'FG007' WHEN 'PROOF_EXPIRED' THEN 'FG008' WHEN 'STALE_OWNER' THEN 'FG009'
    WHEN 'SEGMENT_GAP' THEN 'FG010' WHEN 'ROOT_MISMATCH' THEN 'FG011' WHEN 'QUARANTINED' THEN 'FG012'
    WHEN 'FENCE_REGRESSION' THEN 'FG013' WHEN 'RESOURCE_PAUSED' THEN 'FG014' WHEN 'READ_GRANT' THEN 'FG015'
    ELSE 'FG099' END
$fg$;

-- reject raises the outcome's SQLSTATE with the outcome code first in
-- the message and a JSON detail.
CREATE OR REPLACE FUNCTION fencegate.reject(outcome TEXT, reason TEXT, detail JSONB) RETURNS VOID LANGUAGE plpgsql AS $fg$
BEGIN
  RAISE EXCEPTION USING ERRCODE = fencegate.sqlstate(outcome),
    MESSAGE = 'fencegate: ' || outcome || ': ' || reason,
    DETAIL = (jsonb_build_object('outcome', outcome, 'reason', reason) || coalesce(detail, '{}'::jsonb))::text,
    HINT = CASE
      WHEN outcome = 'REPLAYED' THEN 'the write already stands: roll back and treat it as done (DETAIL has the original receipt)'
      WHEN coalesce((detail ->> 'recorded')::boolean, FALSE) THEN 'roll back, then SELECT fencegate.record(envelope, payload_digest) in a new transaction to keep the alarm, quarantine or pause'
      ELSE 'roll back: nothing was written' END;
END $fg$;

-- refused raises an operator action's refusal (FG021).
CREATE OR REPLACE FUNCTION fencegate.refused(why TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
BEGIN
  RAISE EXCEPTION 'fencegate: refused: %', why USING ERRCODE = 'FG021';
END $fg$;
