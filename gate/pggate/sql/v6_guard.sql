-- fencegate PostgreSQL-native gate, schema version 6: the coverage guard
-- per resource.
--
-- Until now the guard admitted every row a transaction wrote once apply
-- had let any change proceed in it: an accept of resource a opened the
-- rows of resource r, and a shadow-mode pass-through (a stale envelope
-- for a resource in shadow mode) opened the enforce-mode tables. Now the
-- mark is the accept itself: each receipt keeps the ID of the
-- transaction that stored it, and a protected table's guard admits a row
-- only when the receipt at its resource's fence state was stored by the
-- writing transaction (in enforce mode, for a table in enforce mode).
-- Only apply stores receipts, and the writer's roles cannot write the
-- table, so the writer cannot create the mark; it names its resource;
-- it lives exactly as long as the accepting transaction (a later
-- transaction has another ID). The tx_accepts table and its commit-time
-- trigger go: apply no longer writes a mark beside the receipt.
ALTER TABLE fencegate.receipts ADD COLUMN xid XID8;
ALTER TABLE fencegate.receipts ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
-- resource_expr: the column or expression naming a protected row's
-- resource ('' when unknown: no row is admitted, or each is counted
-- ungated, until the table is protected again naming it).
ALTER TABLE fencegate.protected ADD COLUMN resource_expr TEXT NOT NULL DEFAULT 'resource';

-- run is version 1's without the tx_accepts mark.
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

-- guard_row_resource is the SQL, in a trigger on the table, of the
-- resource of trigger row rec (NEW or OLD) as text: a lower-case column
-- name as itself, any other expression evaluated over the row's columns
-- (with search_path pg_catalog), '' as NULL (unknown).
CREATE FUNCTION fencegate.guard_row_resource(resource TEXT, rec TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN coalesce(resource, '') = '' THEN 'NULL::text'
    WHEN resource ~ '^[a-z_][a-z0-9_]*$' THEN format('(%s.%s)::text', rec, resource)
    ELSE format('(SELECT (%s)::text FROM (SELECT %s.*) AS t)', resource, rec) END
$fg$;

-- install_guard (re)installs the guard of protected table tbl: a trigger
-- function of its own, SECURITY DEFINER with a fixed search_path, that
-- admits a row when its resource's last receipt was stored by this
-- transaction (an UPDATE that moves a row to another resource needs both)
-- and counts it on the resource's gated_writes; else refuses it (enforce,
-- FG020) or counts it on the table's ungated (shadow).
CREATE FUNCTION fencegate.install_guard(tbl REGCLASS, mode TEXT, resource TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  fn TEXT := format('fencegate.guard_%s', tbl::oid);
  -- The receipt at the fence row's state, by a subquery correlated with
  -- the row (a point lookup on the receipts' key), not an EXISTS, whose
  -- generic plan is a join reading every receipt of the resource.
  accepted TEXT := '(SELECT c.xid FROM fencegate.receipts c WHERE c.resource = r.resource AND c.fence = r.highest_fence'
    || ' AND c.seq = r.last_seq' || CASE WHEN mode = 'enforce' THEN ' AND c.mode = ''enforce''' ELSE '' END || ') = pg_current_xact_id()';
  otherwise TEXT := 'UPDATE fencegate.protected SET ungated = ungated + 1 WHERE table_name = TG_RELID::regclass;';
BEGIN
  IF mode = 'enforce' THEN
    otherwise := $o$RAISE EXCEPTION USING ERRCODE = 'FG020',
      MESSAGE = format('fencegate: FG020: %s on protected table %s outside an accepting fencegate.apply of the resource of the row (%s) in this transaction, in enforce mode',
        TG_OP, TG_RELID::regclass, coalesce(quote_literal(res), 'NULL')),
      HINT = 'call fencegate.apply for the resource of the row earlier in the same transaction';$o$;
  END IF;
  EXECUTE format($t$CREATE OR REPLACE FUNCTION %1$s() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $g$
DECLARE
  res TEXT;
  was TEXT;
  ok BOOLEAN := TRUE;
BEGIN
  IF TG_OP = 'DELETE' THEN res := %2$s; ELSE res := %3$s; END IF;
  IF TG_OP = 'UPDATE' THEN
    was := %2$s;
    IF was IS DISTINCT FROM res THEN
      PERFORM FROM fencegate.resources r WHERE r.resource = was AND %4$s;
      ok := FOUND;
      IF NOT ok THEN res := was; END IF;
    END IF;
  END IF;
  IF ok THEN
    UPDATE fencegate.resources r SET gated_writes = r.gated_writes + 1 WHERE r.resource = res AND %4$s;
    ok := FOUND;
  END IF;
  IF NOT ok THEN
    %5$s
  END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $g$$t$, fn, fencegate.guard_row_resource(resource, 'OLD'), fencegate.guard_row_resource(resource, 'NEW'), accepted, otherwise);
  EXECUTE format('REVOKE ALL ON FUNCTION %s() FROM PUBLIC', fn);
  EXECUTE format('DROP TRIGGER IF EXISTS fencegate_guard ON %s', tbl);
  EXECUTE format('CREATE TRIGGER fencegate_guard BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION %s()', tbl, fn);
END $fg$;

-- protect registers a table and installs its guard, rows naming their
-- resource by resource (a column, or an SQL expression over the row's
-- columns, at most 256 bytes, without ';', '$' or comments, evaluated
-- with search_path pg_catalog); shadow → enforce only.
CREATE FUNCTION fencegate.protect(tbl REGCLASS, mode TEXT, operator TEXT, resource TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  cur TEXT;
BEGIN
  IF coalesce(operator, '') = '' THEN PERFORM fencegate.refused('operator actions need the operator''s name'); END IF;
  IF mode NOT IN ('shadow', 'enforce') THEN PERFORM fencegate.refused(format('gate: mode downgrade refused: mode %L', mode)); END IF;
  IF resource IS NULL OR octet_length(resource) NOT BETWEEN 1 AND 256 OR resource ~ '[;$]|--|/\*|\*/' THEN
    PERFORM fencegate.refused(format('protect %s: resource %L: want a column name or an SQL expression over the row''s columns of 1..256 bytes without '';'', ''$'' or comments', tbl, resource));
  END IF;
  BEGIN
    EXECUTE format('SELECT (%s)::text FROM %s AS t LIMIT 0', resource, tbl);
  EXCEPTION WHEN OTHERS THEN
    PERFORM fencegate.refused(format('protect %s: resource %L does not evaluate on its rows: %s', tbl, resource, SQLERRM));
  END;
  SELECT p.mode INTO cur FROM fencegate.protected p WHERE p.table_name = tbl FOR UPDATE;
  IF cur = 'enforce' AND mode <> 'enforce' THEN
    PERFORM fencegate.refused(format('gate: mode downgrade refused: enforce is final: protect %s %s → %s', tbl, cur, mode));
  END IF;
  INSERT INTO fencegate.protected (table_name, mode, resource_expr) VALUES (tbl, mode, resource)
    ON CONFLICT (table_name) DO UPDATE SET mode = excluded.mode, resource_expr = excluded.resource_expr;
  PERFORM fencegate.install_guard(tbl, mode, resource);
  PERFORM fencegate.act(tbl::text, 'protect', operator, format('protect %s mode %s → %s, resource %s', tbl, coalesce(cur, 'shadow'), mode, resource));
END $fg$;

-- protect with three arguments is version 1's call: the rows name their
-- resource in the column resource.
CREATE OR REPLACE FUNCTION fencegate.protect(tbl REGCLASS, mode TEXT, operator TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
BEGIN
  PERFORM fencegate.protect(tbl, mode, operator, 'resource');
END $fg$;

-- Every table protected before: guarded per resource by its column
-- resource, or, without one, admitting no row (enforce) or counting each
-- (shadow) until protected again naming its resource. A table dropped
-- since is left alone.
DO $fg$
DECLARE
  p RECORD;
BEGIN
  FOR p IN SELECT table_name, mode FROM fencegate.protected ORDER BY table_name::text LOOP
    CONTINUE WHEN to_regclass(p.table_name::text) IS NULL;
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = p.table_name AND attname = 'resource' AND attnum > 0 AND NOT attisdropped) THEN
      UPDATE fencegate.protected SET resource_expr = '' WHERE table_name = p.table_name;
      PERFORM fencegate.install_guard(p.table_name, p.mode, '');
    ELSE
      PERFORM fencegate.install_guard(p.table_name, p.mode, 'resource');
    END IF;
  END LOOP;
END $fg$;

DROP FUNCTION fencegate.guard();
DROP TABLE fencegate.tx_accepts;
DROP FUNCTION fencegate.tx_accepts_done();

-- Privileges: the new functions are the owner's alone.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA fencegate FROM PUBLIC;
