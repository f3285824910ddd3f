-- fencegate PostgreSQL-native gate, schema version 1, part 3: the entry
-- points (apply, record, receipt, state), the operator functions, the
-- coverage guard of protected tables, and the privileges.

-- lock_state locks the resource's row (creating it in the default mode)
-- and returns it.
CREATE FUNCTION fencegate.lock_state(resource TEXT) RETURNS fencegate.resources LANGUAGE plpgsql AS $fg$
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
CREATE FUNCTION fencegate.write_records(v fencegate.verified, d fencegate.decision, prior fencegate.receipts, now_ms BIGINT)
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

-- run authenticates and decides one envelope with the resource's row
-- locked. apply (record_only false) stores an accept, raises every
-- rejection and REPLAYED; record (record_only true) stores only what a
-- rejection records (alarm, quarantine, pause) and never accepts.
CREATE FUNCTION fencegate.run(envelope TEXT, payload_digest TEXT, record_only BOOLEAN) RETURNS JSONB
LANGUAGE plpgsql AS $fg$
DECLARE
  e fencegate.envelope_t := fencegate.parse_envelope(envelope);
  v fencegate.verified;
  st fencegate.resources;
  prior fencegate.receipts;
  d fencegate.decision;
  now_ms BIGINT;
  rc fencegate.receipts;
BEGIN
  IF payload_digest IS DISTINCT FROM e.payload_digest THEN
    PERFORM fencegate.reject('BINDING_MISMATCH', format('the envelope names payload %s, the caller writes %s', e.payload_digest, coalesce(payload_digest, 'NULL')),
      jsonb_build_object('resource', e.resource, 'fenceToken', e.fence, 'segmentSeq', e.seq));
  END IF;
  v := fencegate.authenticate(e, (SELECT identity FROM fencegate.callers WHERE role_name = session_user));
  st := fencegate.lock_state(v.resource);
  now_ms := fencegate.now_ms();
  SELECT * INTO prior FROM fencegate.receipts r WHERE r.resource = v.resource AND r.fence = v.fence AND r.seq = v.seq;
  d := fencegate.decide(v, st, prior, now_ms, (SELECT status_skew_ms FROM fencegate.settings));
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
  INSERT INTO fencegate.tx_accepts (resource) VALUES (v.resource) ON CONFLICT (xid) DO NOTHING;
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

-- apply is the gate. Call it in the transaction that makes the business
-- change, before the change: it returns the receipt (ACCEPTED) or, in
-- shadow mode, what it would have rejected; it raises REPLAYED (FG100) and
-- every rejection (FG001..FG014) with the outcome code first in the
-- message and a JSON detail.
CREATE FUNCTION fencegate.apply(envelope TEXT, payload_digest TEXT) RETURNS JSONB LANGUAGE sql AS $fg$
  SELECT fencegate.run(envelope, payload_digest, FALSE)
$fg$;

-- record keeps what a rejection records (alarm, quarantine entry, pause),
-- which the rollback after apply's error took back. Call it in a new
-- transaction with the same arguments; it never accepts.
CREATE FUNCTION fencegate.record(envelope TEXT, payload_digest TEXT) RETURNS JSONB LANGUAGE sql AS $fg$
  SELECT fencegate.run(envelope, payload_digest, TRUE)
$fg$;

-- receipt answers MUTATION_UNKNOWN recovery (gate.Judge) for an operation
-- attempted under fence.
CREATE FUNCTION fencegate.receipt(resource TEXT, operation_id TEXT, fence BIGINT) RETURNS JSONB LANGUAGE sql STABLE AS $fg$
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
CREATE FUNCTION fencegate.state(resource TEXT) RETURNS JSONB LANGUAGE sql STABLE AS $fg$
  SELECT coalesce((SELECT to_jsonb(r) - 'gated_writes' FROM fencegate.resources r WHERE r.resource = state.resource),
    jsonb_build_object('resource', state.resource, 'mode', (SELECT default_mode FROM fencegate.settings), 'highest_fence', 0,
      'root', '', 'last_seq', 0, 'grant_digest', '', 'grant_issued_at_ms', NULL, 'min_policy_generation', 0,
      'paused', FALSE, 'paused_reason', '', 'fence_floor', 0, 'floor_at_ms', NULL))
$fg$;

-- Operator actions, recorded in operator_actions. They raise FG021 when
-- refused.
CREATE FUNCTION fencegate.refused(why TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
BEGIN
  RAISE EXCEPTION 'fencegate: refused: %', why USING ERRCODE = 'FG021';
END $fg$;

CREATE FUNCTION fencegate.act(resource TEXT, action TEXT, operator TEXT, detail TEXT) RETURNS VOID LANGUAGE sql AS $fg$
  INSERT INTO fencegate.operator_actions (subject, action, operator, detail, at_ms) VALUES (resource, action, operator, detail, fencegate.now_ms())
$fg$;

-- resume is gate.Resume: lift a pause once the registry's fence floor is
-- above highestFence; the floor and the instant are kept.
CREATE FUNCTION fencegate.resume(resource TEXT, registry_floor BIGINT, operator TEXT, note TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  st fencegate.resources;
BEGIN
  IF coalesce(operator, '') = '' THEN PERFORM fencegate.refused('operator actions need the operator''s name'); END IF;
  st := fencegate.lock_state(resource);
  IF NOT st.paused THEN PERFORM fencegate.refused(format('gate: resume refused: resource %s is not paused', resource)); END IF;
  IF registry_floor <= st.highest_fence THEN
    PERFORM fencegate.refused(format('gate: resume refused: resource %s: registry floor %s is not above highestFence %s; raise the registry''s fence floor first',
      resource, registry_floor, st.highest_fence));
  END IF;
  UPDATE fencegate.resources r SET paused = FALSE, paused_reason = '', fence_floor = greatest(r.fence_floor, registry_floor),
    floor_at_ms = fencegate.now_ms() WHERE r.resource = resume.resource;
  PERFORM fencegate.act(resource, 'resume', operator, format('resume registry floor %s > highestFence %s; was paused: %s; note: %s',
    registry_floor, st.highest_fence, st.paused_reason, note));
END $fg$;

-- set_mode moves a resource shadow → enforce; enforce is final.
CREATE FUNCTION fencegate.set_mode(resource TEXT, mode TEXT, operator TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  st fencegate.resources;
BEGIN
  IF coalesce(operator, '') = '' THEN PERFORM fencegate.refused('operator actions need the operator''s name'); END IF;
  IF mode NOT IN ('shadow', 'enforce') THEN PERFORM fencegate.refused(format('gate: mode downgrade refused: mode %L', mode)); END IF;
  -- a resource never seen is created in the mode asked for
  INSERT INTO fencegate.resources (resource, mode) VALUES (set_mode.resource, set_mode.mode) ON CONFLICT DO NOTHING;
  st := fencegate.lock_state(resource);
  IF st.mode = 'enforce' AND mode <> 'enforce' THEN
    PERFORM fencegate.refused(format('gate: mode downgrade refused: enforce is final: %s → %s', st.mode, mode));
  END IF;
  UPDATE fencegate.resources r SET mode = set_mode.mode WHERE r.resource = set_mode.resource;
  PERFORM fencegate.act(resource, 'set-mode', operator, format('set-mode %s → %s', st.mode, mode));
END $fg$;

-- set_min_policy_generation raises the lowest grant policy generation the
-- resource accepts; it only rises.
CREATE FUNCTION fencegate.set_min_policy_generation(resource TEXT, gen BIGINT, operator TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  st fencegate.resources;
BEGIN
  IF coalesce(operator, '') = '' THEN PERFORM fencegate.refused('operator actions need the operator''s name'); END IF;
  st := fencegate.lock_state(resource);
  IF gen < st.min_policy_generation THEN
    PERFORM fencegate.refused(format('gate: min policy generation %s: must be between the current %s and 9223372036854775807', gen, st.min_policy_generation));
  END IF;
  UPDATE fencegate.resources r SET min_policy_generation = gen WHERE r.resource = set_min_policy_generation.resource;
  PERFORM fencegate.act(resource, 'set-min-policy-generation', operator, format('set-min-policy-generation %s → %s', st.min_policy_generation, gen));
END $fg$;

-- set_key enrolls or changes one HMAC key of this gate's trust bundle
-- (rotation: add the new key active, move the old one to verify-only,
-- then retired). Its secret never leaves the database again.
CREATE FUNCTION fencegate.set_key(key_id TEXT, secret BYTEA, min_epoch BIGINT, max_epoch BIGINT, state TEXT) RETURNS VOID LANGUAGE sql AS $fg$
  INSERT INTO fencegate.keys VALUES (key_id, secret, min_epoch, max_epoch, state)
  ON CONFLICT (key_id) DO UPDATE SET secret = excluded.secret, min_epoch = excluded.min_epoch,
    max_epoch = excluded.max_epoch, state = excluded.state
$fg$;

-- set_revoked_below revokes every issuer epoch below epoch; it only rises.
CREATE FUNCTION fencegate.set_revoked_below(epoch BIGINT) RETURNS VOID LANGUAGE sql AS $fg$
  UPDATE fencegate.settings SET revoked_below_epoch = greatest(revoked_below_epoch, epoch)
$fg$;

-- map_caller makes login role role_name the workload identity identity.
CREATE FUNCTION fencegate.map_caller(role_name TEXT, identity TEXT) RETURNS VOID LANGUAGE sql AS $fg$
  INSERT INTO fencegate.callers VALUES (role_name, identity)
  ON CONFLICT (role_name) DO UPDATE SET identity = excluded.identity
$fg$;

-- set_clock sets (ms) or clears (NULL) the gate clock: for tests only.
CREATE FUNCTION fencegate.set_clock(ms BIGINT) RETURNS VOID LANGUAGE sql AS $fg$
  UPDATE fencegate.settings SET clock_ms = ms
$fg$;

-- guard is the coverage guard of a protected table: a row written in a
-- transaction where apply let a change proceed is counted as gated;
-- otherwise enforce refuses it (FG020) and shadow counts it as ungated.
CREATE FUNCTION fencegate.guard() RETURNS trigger LANGUAGE plpgsql AS $fg$
BEGIN
  UPDATE fencegate.tx_accepts SET writes = writes + 1 WHERE xid = pg_current_xact_id();
  IF NOT FOUND THEN
    IF TG_ARGV[0] = 'enforce' THEN
      RAISE EXCEPTION 'fencegate: % on protected table % outside an accepting fencegate.apply', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'FG020';
    END IF;
    UPDATE fencegate.protected SET ungated = ungated + 1 WHERE table_name = TG_RELID::regclass;
  END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $fg$;

-- tx_accepts_done runs at commit: it adds the transaction's gated writes
-- to the resource and removes the mark.
CREATE FUNCTION fencegate.tx_accepts_done() RETURNS trigger LANGUAGE plpgsql AS $fg$
BEGIN
  UPDATE fencegate.resources r SET gated_writes = r.gated_writes + t.writes
    FROM fencegate.tx_accepts t WHERE t.xid = NEW.xid AND r.resource = t.resource;
  DELETE FROM fencegate.tx_accepts WHERE xid = NEW.xid;
  RETURN NULL;
END $fg$;
CREATE CONSTRAINT TRIGGER tx_accepts_done AFTER INSERT ON fencegate.tx_accepts
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fencegate.tx_accepts_done();

-- protect registers a table and installs its guard; shadow → enforce only.
CREATE FUNCTION fencegate.protect(tbl REGCLASS, mode TEXT, operator TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  cur TEXT;
BEGIN
  IF coalesce(operator, '') = '' THEN PERFORM fencegate.refused('operator actions need the operator''s name'); END IF;
  IF mode NOT IN ('shadow', 'enforce') THEN PERFORM fencegate.refused(format('gate: mode downgrade refused: mode %L', mode)); END IF;
  SELECT p.mode INTO cur FROM fencegate.protected p WHERE p.table_name = tbl FOR UPDATE;
  IF cur = 'enforce' AND mode <> 'enforce' THEN
    PERFORM fencegate.refused(format('gate: mode downgrade refused: enforce is final: protect %s %s → %s', tbl, cur, mode));
  END IF;
  INSERT INTO fencegate.protected (table_name, mode) VALUES (tbl, mode) ON CONFLICT (table_name) DO UPDATE SET mode = excluded.mode;
  EXECUTE format('DROP TRIGGER IF EXISTS fencegate_guard ON %s', tbl);
  EXECUTE format('CREATE TRIGGER fencegate_guard BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION fencegate.guard(%L)', tbl, mode);
  PERFORM fencegate.act(tbl::text, 'protect', operator, format('protect %s mode %s → %s', tbl, coalesce(cur, 'shadow'), mode));
END $fg$;

-- Privileges. The installing role owns everything. Nothing is PUBLIC;
-- the role fencegate_writer may call apply, record, receipt and state,
-- which run as the owner (SECURITY DEFINER) with a fixed search_path, so
-- a writer can neither read the keys nor write the gate's tables.
REVOKE ALL ON ALL TABLES IN SCHEMA fencegate FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA fencegate FROM PUBLIC;
REVOKE ALL ON SCHEMA fencegate FROM PUBLIC;
DO $fg$ BEGIN
  CREATE ROLE fencegate_writer NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $fg$;
GRANT USAGE ON SCHEMA fencegate TO fencegate_writer;
ALTER FUNCTION fencegate.apply(TEXT, TEXT) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencegate.record(TEXT, TEXT) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencegate.receipt(TEXT, TEXT, BIGINT) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencegate.state(TEXT) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencegate.guard() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencegate.tx_accepts_done() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
GRANT EXECUTE ON FUNCTION fencegate.apply(TEXT, TEXT), fencegate.record(TEXT, TEXT),
  fencegate.receipt(TEXT, TEXT, BIGINT), fencegate.state(TEXT) TO fencegate_writer;
