-- fencegate PostgreSQL-native gate, schema version 4: the same functions,
-- cheaper to call. Nothing here changes what any function returns.
--
-- Why: PostgreSQL inlines a LANGUAGE sql function into its caller only
-- when the body is no less stable than the function says it is and the
-- function has no SET clause. stamp, judge, operation_root, receipt_id and
-- receipt_json are declared IMMUTABLE but call to_char, format or
-- convert_to (STABLE), now_ms calls clock_timestamp (VOLATILE), and apply
-- and record run with SET search_path: none of them is inlined. A
-- LANGUAGE sql function that is not inlined is parsed, analysed and
-- planned again in every transaction that calls it (PostgreSQL before 18
-- keeps no plan for it across transactions), which was most of apply's
-- time (docs/performance.md, "The gate inside PostgreSQL"). PL/pgSQL
-- keeps its compiled body and plans for the session, so the same
-- expressions, returned from PL/pgSQL, cost a fraction. Volatility,
-- SECURITY DEFINER, search_path and the grants stay as version 1 set
-- them (CREATE OR REPLACE keeps the grants; the rest is restated).

CREATE OR REPLACE FUNCTION fencegate.now_ms() RETURNS BIGINT LANGUAGE plpgsql STABLE AS $fg$
BEGIN
  RETURN coalesce((SELECT clock_ms FROM fencegate.settings), floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
END $fg$;

CREATE OR REPLACE FUNCTION fencegate.stamp(ms BIGINT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN CASE WHEN ms IS NULL THEN 'unknown'
    ELSE to_char((timestamp '1970-01-01' + ms * interval '1 millisecond'), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END;
END $fg$;

CREATE OR REPLACE FUNCTION fencegate.operation_root(resource TEXT, operation_id TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN fencegate.digest_text(sha256('fencegate/operationRoot/v1'::bytea || '\x00'::bytea
    || int8send(octet_length(resource)::bigint) || convert_to(resource, 'UTF8')
    || int8send(octet_length(operation_id)::bigint) || convert_to(operation_id, 'UTF8')));
END $fg$;

CREATE OR REPLACE FUNCTION fencegate.receipt_id(r fencegate.receipts, outcome TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN fencegate.digest_text(sha256('fencegate/receipt/v1'::bytea || '\x00'::bytea || convert_to(
    'resource: ' || r.resource || E'\n' || 'fenceToken: ' || r.fence || E'\n' || 'operationRoot: ' || r.operation_root || E'\n'
    || 'operationId: ' || r.operation_id || E'\n' || 'segmentSeq: ' || r.seq || E'\n' || 'payloadDigest: ' || r.payload_digest || E'\n'
    || 'grant: ' || r.grant_digest || E'\n' || 'acceptedAt: ' || fencegate.stamp(r.accepted_at_ms) || E'\n'
    || 'mode: ' || r.mode || E'\n' || 'outcome: ' || outcome || E'\n', 'UTF8')));
END $fg$;

CREATE OR REPLACE FUNCTION fencegate.receipt_json(r fencegate.receipts) RETURNS JSONB LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN jsonb_build_object('id', fencegate.receipt_id(r, 'ACCEPTED'), 'resource', r.resource, 'fenceToken', r.fence,
    'operationRoot', r.operation_root, 'operationId', r.operation_id, 'segmentSeq', r.seq,
    'payloadDigest', r.payload_digest, 'grant', r.grant_digest, 'acceptedAt', fencegate.stamp(r.accepted_at_ms),
    'mode', r.mode, 'outcome', 'ACCEPTED');
END $fg$;

CREATE OR REPLACE FUNCTION fencegate.judge(v fencegate.verified, now_ms BIGINT, skew BIGINT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN CASE
    WHEN NOT v.has_status THEN 'NOT_HELD|no status proof and no status querier configured'
    WHEN v.status_state <> 'HELD' THEN 'NOT_HELD|grant is ' || v.status_state || ' (status proof)'
    WHEN NOT (now_ms + skew < v.status_valid_ms) THEN format('PROOF_EXPIRED|%s %s, gate clock %s + skew bound %s ms',
      CASE WHEN v.status_from_grant THEN 'no status proof, and the grant''s held statement is valid until' ELSE 'status proof valid until' END,
      fencegate.stamp(v.status_valid_ms), fencegate.stamp(now_ms), skew)
  END;
END $fg$;

CREATE OR REPLACE FUNCTION fencegate.apply(envelope TEXT, payload_digest TEXT) RETURNS JSONB LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fg$
BEGIN
  RETURN fencegate.run(envelope, payload_digest, FALSE);
END $fg$;

CREATE OR REPLACE FUNCTION fencegate.record(envelope TEXT, payload_digest TEXT) RETURNS JSONB LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fg$
BEGIN
  RETURN fencegate.run(envelope, payload_digest, TRUE);
END $fg$;

-- parse_envelope, as version 1 wrote it, read the JSON text once per
-- member access (a json value is text: every -> and ->> parses it again,
-- about 25 times per envelope). This one reads the members once
-- (json_each, in document order, duplicates kept) and then looks at the
-- arrays; the checks, their order and their reasons are version 1's: per
-- member in order, unknown, then duplicate, then the type of the member's
-- last value (what -> returns for a duplicated name); values are
-- unescaped only when every member passed.
CREATE OR REPLACE FUNCTION fencegate.parse_envelope(envelope TEXT) RETURNS fencegate.envelope_t LANGUAGE plpgsql AS $fg$
DECLARE
  j JSON;
  ks TEXT[];
  vs JSON[];
  n INT;
  i INT;
  l INT;
  e fencegate.envelope_t;
  why TEXT;
  fence TEXT; seq TEXT;
BEGIN
  IF envelope IS NULL OR octet_length(envelope) > 24576 THEN
    PERFORM fencegate.reject('MALFORMED', 'json: envelope missing or above 24576 bytes', NULL);
  END IF;
  BEGIN
    j := envelope::json;
    IF json_typeof(j) <> 'object' THEN
      why := 'want a JSON object';
    ELSE
      SELECT array_agg(t.key ORDER BY t.n), array_agg(t.value ORDER BY t.n) INTO ks, vs
        FROM json_each(j) WITH ORDINALITY AS t(key, value, n);
      n := coalesce(array_length(ks, 1), 0);
      FOR i IN 1 .. n LOOP
        IF ks[i] <> ALL (ARRAY['resource', 'lease', 'operationId', 'fenceToken', 'segmentSeq', 'payloadDigest',
            'grant', 'grantProof', 'status', 'statusProof', 'gateProofs']) THEN
          why := format('unknown field %I', ks[i]);
        ELSIF ks[i] = ANY (ks[1:i - 1]) THEN
          why := format('duplicate field %I', ks[i]);
        ELSE
          l := n;
          WHILE ks[l] <> ks[i] LOOP l := l - 1; END LOOP;
          IF ks[i] IN ('fenceToken', 'segmentSeq') AND json_typeof(vs[l]) NOT IN ('number', 'null')
            OR ks[i] = 'gateProofs' AND json_typeof(vs[l]) NOT IN ('array', 'null')
            OR ks[i] NOT IN ('fenceToken', 'segmentSeq', 'gateProofs') AND json_typeof(vs[l]) NOT IN ('string', 'null') THEN
            why := format('field %I has the wrong type', ks[i]);
          END IF;
        END IF;
        EXIT WHEN why IS NOT NULL;
      END LOOP;
      IF why IS NULL THEN
        fence := coalesce(vs[array_position(ks, 'fenceToken')]::text, '0');
        seq := coalesce(vs[array_position(ks, 'segmentSeq')]::text, '0');
        e := ROW(coalesce(vs[array_position(ks, 'resource')] #>> '{}', ''), coalesce(vs[array_position(ks, 'lease')] #>> '{}', ''),
          coalesce(vs[array_position(ks, 'operationId')] #>> '{}', ''),
          CASE WHEN fence ~ '^[0-9]{1,19}$' AND fence::numeric <= 9223372036854775807 THEN fence::bigint END,
          CASE WHEN seq ~ '^[0-9]{1,19}$' AND seq::numeric <= 9223372036854775807 THEN seq::bigint END,
          coalesce(vs[array_position(ks, 'payloadDigest')] #>> '{}', ''), coalesce(vs[array_position(ks, 'grant')] #>> '{}', ''),
          coalesce(vs[array_position(ks, 'grantProof')] #>> '{}', ''), coalesce(vs[array_position(ks, 'status')] #>> '{}', ''),
          coalesce(vs[array_position(ks, 'statusProof')] #>> '{}', ''), vs[array_position(ks, 'gateProofs')]::jsonb);
        why := fencegate.gate_proofs_shape(vs[array_position(ks, 'gateProofs')]);
      END IF;
    END IF;
  EXCEPTION WHEN OTHERS THEN
    why := 'not JSON PostgreSQL can hold: ' || SQLERRM;
  END;
  IF why IS NULL THEN
    why := CASE
      WHEN NOT fencegate.valid_resource(e.resource) THEN 'field resource'
      WHEN NOT fencegate.valid_token(e.lease) THEN 'field lease'
      WHEN NOT fencegate.valid_token(e.operation_id) THEN 'field operationId'
      WHEN e.fence IS NULL OR e.fence < 1 THEN 'field fenceToken: outside 1..9223372036854775807'
      WHEN e.seq IS NULL OR e.seq < 1 THEN 'field segmentSeq: outside 1..9223372036854775807'
      WHEN fencegate.parse_digest(e.payload_digest) IS NULL OR e.payload_digest = 'sha256:' || repeat('0', 64) THEN 'field payloadDigest'
      WHEN octet_length(e.grant_text) NOT BETWEEN 1 AND 4096 THEN 'field grant: want 1..4096 bytes'
      WHEN octet_length(e.grant_proof) NOT BETWEEN 1 AND 256 THEN 'field grantProof: want 1..256 bytes'
      WHEN octet_length(e.status_text) > 4096 OR octet_length(e.status_proof) > 256 THEN 'field status: above its limits'
      WHEN (e.status_text = '') <> (e.status_proof = '') THEN 'field status: status and statusProof must both be present or both be empty'
      ELSE fencegate.gate_proofs_rules(e.gate_proofs, e.status_text <> '')
    END;
  END IF;
  IF why IS NOT NULL THEN
    PERFORM fencegate.reject('MALFORMED', why, jsonb_build_object('resource', e.resource, 'fenceToken', e.fence, 'segmentSeq', e.seq));
  END IF;
  RETURN e;
END $fg$;
