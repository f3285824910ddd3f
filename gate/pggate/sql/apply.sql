-- The gate inside PostgreSQL, the writer's calls: apply and record (one
-- envelope authenticated, decided and stored with the resource's row
-- locked), receipt (MUTATION_UNKNOWN recovery) and state. These four are
-- all the role fencegate_writer may call (privileges.sql); they run as
-- the gate's owner (SECURITY DEFINER) with a fixed search_path. The
-- triggers at the end keep the fence state and the receipts from being
-- rewritten, by anyone.

-- apply is the gate. Call it in the transaction that makes the business
-- change, before the change: it returns the receipt (ACCEPTED) or, in
-- shadow mode, what it would have rejected; it raises REPLAYED (FG100) and
-- every rejection (FG001..FG015) with the outcome code first in the
-- message and a JSON detail.
CREATE OR REPLACE FUNCTION fencegate.apply(envelope TEXT, payload_digest TEXT) RETURNS JSONB LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fg$
BEGIN
  RETURN fencegate.run(envelope, payload_digest, FALSE);
END $fg$;

-- record keeps what a rejection records (alarm, quarantine entry, pause),
-- which the rollback after apply's error took back. Call it in a new
-- transaction with the same arguments; it never accepts.
CREATE OR REPLACE FUNCTION fencegate.record(envelope TEXT, payload_digest TEXT) RETURNS JSONB LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fg$
BEGIN
  RETURN fencegate.run(envelope, payload_digest, TRUE);
END $fg$;

-- run authenticates and decides one envelope with the resource's row
-- locked. apply (record_only false) stores an accept, raises every
-- rejection and REPLAYED; record (record_only true) stores only what a
-- rejection records (alarm, quarantine, pause) and never accepts. The
-- receipt an accept stores is also the coverage guard's mark (its xid
-- column is the accepting transaction's, guard.sql).
CREATE OR REPLACE FUNCTION fencegate.run(envelope TEXT, payload_digest TEXT, record_only BOOLEAN) RETURNS JSONB
LANGUAGE plpgsql AS $fg$
DECLARE
  e fencegate.envelope_t := fencegate.parse_envelope(envelope);
  v fencegate.verified;
  st fencegate.resources;
  prior fencegate.receipts;
  d fencegate.decision;
  now_ms BIGINT;
  rc fencegate.receipts;
  caller TEXT;
  classes TEXT[];
  clock_ms BIGINT;
  skew BIGINT;
BEGIN
  IF payload_digest IS DISTINCT FROM e.payload_digest THEN
    PERFORM fencegate.reject('BINDING_MISMATCH', format('the envelope names payload %s, the caller writes %s', e.payload_digest, coalesce(payload_digest, 'NULL')),
      jsonb_build_object('resource', e.resource, 'fenceToken', e.fence, 'segmentSeq', e.seq));
  END IF;
  -- The settings and the caller's identity in one read; the clock is
  -- read after the row lock, which may have been waited for.
  SELECT c.identity, s.operation_classes, s.clock_ms, s.status_skew_ms INTO caller, classes, clock_ms, skew
    FROM fencegate.settings s LEFT JOIN fencegate.callers c ON c.role_name = session_user;
  v := fencegate.authenticate(e, caller, classes);
  SELECT * INTO st FROM fencegate.resources r WHERE r.resource = v.resource FOR UPDATE;
  IF NOT FOUND THEN st := fencegate.lock_state(v.resource); END IF;
  now_ms := fencegate.clock_at(clock_ms);
  SELECT * INTO prior FROM fencegate.receipts r WHERE r.resource = v.resource AND r.fence = v.fence AND r.seq = v.seq;
  d := fencegate.decide(v, st, prior, now_ms, skew);
  IF record_only THEN
    IF NOT d.proceed AND d.outcome <> 'REPLAYED' THEN
      PERFORM fencegate.write_records(v, d, prior, now_ms);
    END IF;
    RETURN jsonb_build_object('outcome', d.outcome, 'recorded', d.recorded AND NOT d.proceed);
  END IF;
  IF d.outcome = 'REPLAYED' THEN
    PERFORM fencegate.reject('REPLAYED', d.reason, jsonb_build_object('resource', v.resource, 'fenceToken', v.fence, 'segmentSeq', v.seq,
      'highestFence', st.highest_fence, 'lastSegmentSeq', st.last_seq, 'receipt', fencegate.receipt_json(prior)));
  END IF;
  IF NOT d.proceed THEN
    PERFORM fencegate.reject(d.outcome, d.reason, jsonb_build_object('resource', v.resource, 'fenceToken', v.fence, 'segmentSeq', v.seq,
      'highestFence', st.highest_fence, 'lastSegmentSeq', st.last_seq, 'also', d.also, 'alarm', d.alarm, 'recorded', d.recorded));
  END IF;
  IF d.outcome = 'ACCEPTED' THEN
    UPDATE fencegate.resources SET highest_fence = (d.st).highest_fence, root = (d.st).root, last_seq = (d.st).last_seq,
      grant_digest = (d.st).grant_digest, grant_issued_at_ms = (d.st).grant_issued_at_ms WHERE resource = v.resource;
    INSERT INTO fencegate.receipts VALUES (v.resource, v.fence, v.seq, v.operation_id, v.root, v.payload_digest, v.grant_digest, now_ms, st.mode)
      RETURNING * INTO rc;
    RETURN fencegate.receipt_json(rc);
  END IF;
  PERFORM fencegate.write_records(v, d, prior, now_ms);
  RETURN jsonb_build_object('outcome', d.outcome, 'mode', 'shadow', 'resource', v.resource, 'fenceToken', v.fence,
    'operationId', v.operation_id, 'segmentSeq', v.seq, 'payloadDigest', v.payload_digest, 'reason', d.reason);
END $fg$;

-- lock_state locks the resource's row (creating it in the default mode)
-- and returns it. run locks an existing row itself and calls it only for
-- a resource without one.
CREATE OR REPLACE FUNCTION fencegate.lock_state(resource TEXT) RETURNS fencegate.resources LANGUAGE plpgsql AS $fg$
DECLARE
  st fencegate.resources;
BEGIN
  SELECT * INTO st FROM fencegate.resources r WHERE r.resource = lock_state.resource FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO fencegate.resources (resource, mode) SELECT lock_state.resource, default_mode FROM fencegate.settings
      ON CONFLICT DO NOTHING;
    SELECT * INTO st FROM fencegate.resources r WHERE r.resource = lock_state.resource FOR UPDATE;
  END IF;
  RETURN st;
END $fg$;

-- write_records stores what a decision records besides an accept:
-- alarm, quarantine entry, shadow-log entry, and a pause.
CREATE OR REPLACE FUNCTION fencegate.write_records(v fencegate.verified, d fencegate.decision, prior fencegate.receipts, now_ms BIGINT)
RETURNS VOID LANGUAGE plpgsql AS $fg$
BEGIN
  IF d.store AND d.outcome <> 'ACCEPTED' THEN
    UPDATE fencegate.resources SET paused = (d.st).paused, paused_reason = (d.st).paused_reason WHERE resource = v.resource;
  END IF;
  IF d.alarm <> '' THEN
    INSERT INTO fencegate.alarms (resource, kind, fence, highest_fence, grant_digest, detail, at_ms)
      VALUES (v.resource, d.alarm, v.fence, (d.st).highest_fence, v.grant_digest, d.reason, now_ms);
  END IF;
  IF d.quarantine THEN
    INSERT INTO fencegate.quarantine (resource, fence, seq, operation_id, payload_digest, grant_digest, original_receipt, reason, at_ms)
      VALUES (v.resource, v.fence, v.seq, v.operation_id, v.payload_digest, v.grant_digest, fencegate.receipt_id(prior, 'ACCEPTED'), d.reason, now_ms);
  END IF;
  IF d.shadow_log THEN
    INSERT INTO fencegate.shadow_log (resource, fence, seq, operation_id, outcome, reason, at_ms)
      VALUES (v.resource, v.fence, v.seq, v.operation_id, d.outcome, d.reason, now_ms);
  END IF;
END $fg$;

-- receipt_id is gate.Receipt.ID over the receipt's fields.
CREATE OR REPLACE FUNCTION fencegate.receipt_id(r fencegate.receipts, outcome TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN fencegate.digest_text(sha256('fencegate/receipt/v1'::bytea || '\x00'::bytea || convert_to(
    'resource: ' || r.resource || E'\n' || 'fenceToken: ' || r.fence || E'\n' || 'operationRoot: ' || r.operation_root || E'\n'
    || 'operationId: ' || r.operation_id || E'\n' || 'segmentSeq: ' || r.seq || E'\n' || 'payloadDigest: ' || r.payload_digest || E'\n'
    || 'grant: ' || r.grant_digest || E'\n' || 'acceptedAt: ' || fencegate.stamp(r.accepted_at_ms) || E'\n'
    || 'mode: ' || r.mode || E'\n' || 'outcome: ' || outcome || E'\n', 'UTF8')));
END $fg$;

-- receipt_json is a receipt in gate's one JSON form (gate.DecodeReceipt).
CREATE OR REPLACE FUNCTION fencegate.receipt_json(r fencegate.receipts) RETURNS JSONB LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN jsonb_build_object('id', fencegate.receipt_id(r, 'ACCEPTED'), 'resource', r.resource, 'fenceToken', r.fence,
    'operationRoot', r.operation_root, 'operationId', r.operation_id, 'segmentSeq', r.seq,
    'payloadDigest', r.payload_digest, 'grant', r.grant_digest, 'acceptedAt', fencegate.stamp(r.accepted_at_ms),
    'mode', r.mode, 'outcome', 'ACCEPTED');
END $fg$;

-- receipt answers MUTATION_UNKNOWN recovery (gate.Judge) for an operation
-- attempted under fence.
CREATE OR REPLACE FUNCTION fencegate.receipt(resource TEXT, operation_id TEXT, fence BIGINT) RETURNS JSONB LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fg$
  WITH h AS (SELECT coalesce((SELECT highest_fence FROM fencegate.resources r WHERE r.resource = receipt.resource), 0) AS highest),
  rs AS (SELECT coalesce(jsonb_agg(fencegate.receipt_json(c) ORDER BY c.fence, c.seq), '[]'::jsonb) AS list
    FROM fencegate.receipts c WHERE c.resource = receipt.resource AND c.operation_id = receipt.operation_id)
  SELECT jsonb_build_object('verdict', CASE WHEN jsonb_array_length(rs.list) > 0 THEN 'ACCEPTED'
      WHEN h.highest > receipt.fence THEN 'PROVEN_ABSENT' ELSE 'UNDETERMINED' END,
    'highestFence', h.highest, 'receipts', rs.list)
  FROM h, rs
$fg$;

-- state is the resource's fence state (gate.State's fields; instants in
-- Unix milliseconds, NULL when unknown).
CREATE OR REPLACE FUNCTION fencegate.state(resource TEXT) RETURNS JSONB LANGUAGE sql STABLE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fg$
  SELECT coalesce((SELECT to_jsonb(r) - 'gated_writes' FROM fencegate.resources r WHERE r.resource = state.resource),
    jsonb_build_object('resource', state.resource, 'mode', (SELECT default_mode FROM fencegate.settings), 'highest_fence', 0,
      'root', '', 'last_seq', 0, 'grant_digest', '', 'grant_issued_at_ms', NULL, 'min_policy_generation', 0,
      'paused', FALSE, 'paused_reason', '', 'fence_floor', 0, 'floor_at_ms', NULL))
$fg$;

-- The database refuses what the gate never does: lower a highest fence,
-- change or delete a receipt.
CREATE OR REPLACE FUNCTION fencegate.refuse() RETURNS trigger LANGUAGE plpgsql AS $fg$
BEGIN
  RAISE EXCEPTION 'fencegate: %', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
END $fg$;
CREATE TRIGGER fence_never_decreases BEFORE UPDATE OF highest_fence ON fencegate.resources
  FOR EACH ROW WHEN (NEW.highest_fence < OLD.highest_fence) EXECUTE FUNCTION fencegate.refuse('highest_fence never decreases');
CREATE TRIGGER receipts_never_changed BEFORE UPDATE OR DELETE ON fencegate.receipts
  FOR EACH ROW EXECUTE FUNCTION fencegate.refuse('receipts are never updated or deleted');
CREATE TRIGGER receipts_never_truncated BEFORE TRUNCATE ON fencegate.receipts
  FOR EACH STATEMENT EXECUTE FUNCTION fencegate.refuse('receipts are never deleted');
