-- The gate inside PostgreSQL, parsing: the strict parsers of
-- lockGrant.v1, grantStatus.v1 and the envelope, with the same rules as
-- package grant (ParseGrant, ParseStatus, ids.go) and gate.DecodeMutation.
-- A parser returns NULL (grants, statuses) or raises MALFORMED
-- (envelopes) on anything the Go parser refuses (parse_fuzz_test.go).

-- Identifier rules of package grant (ids.go). A length is checked beside
-- an unbounded pattern, never by a bounded repetition ({1,128}): the
-- regular expression engine builds such a pattern's states on every match
-- (40 µs for a digest, where the pair costs 4).
CREATE OR REPLACE FUNCTION fencegate.segments_ok(s TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $fg$
  SELECT s !~ '(^|/)\.{0,2}(/|$)'
$fg$;

CREATE OR REPLACE FUNCTION fencegate.valid_resource(s TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $fg$
  SELECT s IS NOT NULL AND s ~ '^[a-z0-9._/-]+$' AND octet_length(s) <= 256 AND fencegate.segments_ok(s)
$fg$;

CREATE OR REPLACE FUNCTION fencegate.valid_token(s TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $fg$
  SELECT s IS NOT NULL AND s ~ '^[A-Za-z0-9._:-]+$' AND length(s) <= 128
$fg$;

CREATE OR REPLACE FUNCTION fencegate.valid_class(s TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $fg$
  SELECT s IS NOT NULL AND s ~ '^[a-z0-9._-]+$' AND length(s) <= 64
$fg$;

CREATE OR REPLACE FUNCTION fencegate.valid_owner(s TEXT) RETURNS BOOLEAN LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  rest TEXT;
  td TEXT;
  path TEXT;
BEGIN
  IF s IS NULL OR s = '' OR octet_length(s) > 256 THEN RETURN FALSE; END IF;
  IF left(s, 9) = 'spiffe://' THEN
    rest := substr(s, 10);
    IF position('/' IN rest) = 0 THEN RETURN FALSE; END IF;
    td := split_part(rest, '/', 1);
    path := substr(rest, length(td) + 2);
    RETURN td ~ '^[a-z0-9._-]+$' AND path ~ '^[A-Za-z0-9._/-]+$' AND fencegate.segments_ok(path);
  END IF;
  RETURN s ~ '^[A-Za-z0-9][A-Za-z0-9._-]*$' AND length(s) <= 128;
END $fg$;

-- parse_uint: a canonical decimal uint64 (no sign, no leading zero), or NULL.
CREATE OR REPLACE FUNCTION fencegate.parse_uint(s TEXT) RETURNS NUMERIC LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN s ~ '^(0|[1-9][0-9]*)$' AND length(s) <= 20 AND s::numeric <= 18446744073709551615 THEN s::numeric END
$fg$;

-- parse_time: a UTC instant in grant.TimeLayout with year 1970..9999, as
-- Unix milliseconds, or NULL.
CREATE OR REPLACE FUNCTION fencegate.parse_time(s TEXT) RETURNS BIGINT LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  y INT; mo INT; d INT; h INT; mi INT; se INT; ms INT;
BEGIN
  IF s IS NULL OR s !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$' THEN RETURN NULL; END IF;
  y := substr(s, 1, 4)::int; mo := substr(s, 6, 2)::int; d := substr(s, 9, 2)::int;
  h := substr(s, 12, 2)::int; mi := substr(s, 15, 2)::int; se := substr(s, 18, 2)::int; ms := substr(s, 21, 3)::int;
  IF y < 1970 OR mo < 1 OR mo > 12 OR d < 1 OR h > 23 OR mi > 59 OR se > 59 THEN RETURN NULL; END IF;
  IF d > extract(day FROM make_date(y, mo, 1) + interval '1 month' - interval '1 day') THEN RETURN NULL; END IF;
  RETURN (make_date(y, mo, d) - date '1970-01-01')::bigint * 86400000 + h * 3600000 + mi * 60000 + se * 1000 + ms;
END $fg$;

-- parse_digest: "sha256:" and 64 lowercase hex digits, or NULL.
CREATE OR REPLACE FUNCTION fencegate.parse_digest(s TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN s ~ '^sha256:[0-9a-f]*$' AND length(s) = 71 THEN s END
$fg$;

-- split_fields: the values of a canonical "name: value\n" message whose
-- names are exactly names in order, each value printable ASCII without
-- surrounding blanks; NULL otherwise.
CREATE OR REPLACE FUNCTION fencegate.split_fields(b TEXT, names TEXT[]) RETURNS TEXT[] LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  lines TEXT[];
  vals TEXT[] := '{}';
  i INT;
  p INT;
  v TEXT;
BEGIN
  IF b IS NULL OR octet_length(b) > 4096 OR right(b, 1) <> E'\n' THEN RETURN NULL; END IF;
  lines := string_to_array(left(b, -1), E'\n');
  IF coalesce(array_length(lines, 1), 0) <> array_length(names, 1) THEN RETURN NULL; END IF;
  FOR i IN 1 .. array_length(names, 1) LOOP
    p := position(': ' IN lines[i]);
    IF p = 0 OR left(lines[i], p - 1) <> names[i] THEN RETURN NULL; END IF;
    v := substr(lines[i], p + 2);
    IF v !~ '^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$' THEN RETURN NULL; END IF;
    vals := vals || v;
  END LOOP;
  RETURN vals;
END $fg$;

-- grant_t is a parsed lockGrant.v1; held_until_ms is NULL for a grant
-- without its own HELD statement (no heldUntil line).
CREATE TYPE fencegate.grant_t AS (
  resource TEXT, owner TEXT, request_id TEXT, lease TEXT, operation_root TEXT, operation_class TEXT,
  fence NUMERIC, backend_revision NUMERIC, policy_generation NUMERIC, issuer_epoch NUMERIC, ttl_ms NUMERIC,
  issued_at_ms BIGINT, expires_at_ms BIGINT, held_until_ms BIGINT
);

-- parse_grant: a lockGrant.v1 exactly as grant.ParseGrant accepts it, or
-- NULL. A grant may end with a heldUntil line, its own HELD statement
-- (grant.Grant.HeldUntil), with issuedAt <= heldUntil <= expiresAt. An
-- accepted grant without one has held_until_ms NULL, so test acceptance
-- with (parse_grant(b)).resource IS NOT NULL, not parse_grant(b) IS NOT
-- NULL (true of a composite only when every attribute is).
CREATE OR REPLACE FUNCTION fencegate.parse_grant(b TEXT) RETURNS fencegate.grant_t LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  names TEXT[] := ARRAY['schema', 'resource', 'owner', 'requestId', 'lease', 'operationRoot',
    'operationClass', 'fenceToken', 'backendRevision', 'policyGeneration', 'issuerEpoch', 'ttlMs', 'issuedAt', 'expiresAt'];
  v TEXT[];
  g fencegate.grant_t;
BEGIN
  v := fencegate.split_fields(b, names || 'heldUntil'::TEXT);
  IF v IS NULL THEN
    v := fencegate.split_fields(b, names);
  END IF;
  IF v IS NULL OR v[1] <> 'lockGrant.v1' THEN RETURN NULL; END IF;
  g := ROW(v[2], v[3], v[4], v[5], fencegate.parse_digest(v[6]), v[7], fencegate.parse_uint(v[8]), fencegate.parse_uint(v[9]),
    fencegate.parse_uint(v[10]), fencegate.parse_uint(v[11]), fencegate.parse_uint(v[12]),
    fencegate.parse_time(v[13]), fencegate.parse_time(v[14]), fencegate.parse_time(v[15]));
  IF NOT (fencegate.valid_resource(g.resource) AND fencegate.valid_owner(g.owner) AND fencegate.valid_token(g.request_id)
      AND fencegate.valid_token(g.lease) AND fencegate.valid_class(g.operation_class))
    OR g.operation_root IS NULL OR g.fence IS NULL OR g.backend_revision IS NULL OR g.policy_generation IS NULL
    OR g.issuer_epoch IS NULL OR g.ttl_ms IS NULL OR g.issued_at_ms IS NULL OR g.expires_at_ms IS NULL
    OR g.operation_root = 'sha256:' || repeat('0', 64) OR g.fence = 0 OR g.backend_revision = 0
    OR g.issuer_epoch = 0 OR g.ttl_ms = 0 OR g.ttl_ms > 3153600000000
    OR g.expires_at_ms <> g.issued_at_ms + g.ttl_ms
    OR cardinality(v) = 15 AND (g.held_until_ms IS NULL OR g.held_until_ms NOT BETWEEN g.issued_at_ms AND g.expires_at_ms) THEN
    RETURN NULL;
  END IF;
  RETURN g;
END $fg$;

-- status_t is a parsed grantStatus.v1.
CREATE TYPE fencegate.status_t AS (
  grant_digest TEXT, state TEXT, backend_revision NUMERIC, issuer_epoch NUMERIC, issued_at_ms BIGINT, valid_until_ms BIGINT
);

-- parse_status: a grantStatus.v1 exactly as grant.ParseStatus accepts it, or NULL.
CREATE OR REPLACE FUNCTION fencegate.parse_status(b TEXT) RETURNS fencegate.status_t LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  v TEXT[];
  s fencegate.status_t;
BEGIN
  v := fencegate.split_fields(b, ARRAY['schema', 'grant', 'state', 'backendRevision', 'issuerEpoch', 'issuedAt', 'validUntil']);
  IF v IS NULL OR v[1] <> 'grantStatus.v1' THEN RETURN NULL; END IF;
  s := ROW(fencegate.parse_digest(v[2]), v[3], fencegate.parse_uint(v[4]), fencegate.parse_uint(v[5]),
    fencegate.parse_time(v[6]), fencegate.parse_time(v[7]));
  IF s.grant_digest IS NULL OR s.grant_digest = 'sha256:' || repeat('0', 64)
    OR s.state NOT IN ('HELD', 'EXPIRED', 'RELEASED', 'REVOKED')
    OR s.backend_revision IS NULL OR s.backend_revision = 0 OR s.issuer_epoch IS NULL OR s.issuer_epoch = 0
    OR s.issued_at_ms IS NULL OR s.valid_until_ms IS NULL OR s.valid_until_ms < s.issued_at_ms THEN
    RETURN NULL;
  END IF;
  RETURN s;
END $fg$;

-- The parse cache (schema version 7, fencegate.parsed) is emptied by
-- every install, so that no entry outlives the parser that wrote it.
TRUNCATE fencegate.parsed;

-- parsed_grant is parse_grant(b), from the parse cache when it holds b's
-- SHA-256 (the parsers accept only canonical bytes: an equal digest is an
-- equal message and an equal parse, as in gate/parsecache.go). A parse
-- that succeeds is kept until the grant's expiresAt.
CREATE OR REPLACE FUNCTION fencegate.parsed_grant(b TEXT) RETURNS fencegate.grant_t LANGUAGE plpgsql AS $fg$
DECLARE
  d BYTEA := sha256(convert_to(b, 'UTF8'));
  t TEXT;
  g fencegate.grant_t;
BEGIN
  SELECT p.parse INTO t FROM fencegate.parsed p WHERE p.digest = d;
  IF t IS NOT NULL THEN RETURN t::fencegate.grant_t; END IF;
  g := fencegate.parse_grant(b);
  IF g.resource IS NOT NULL THEN PERFORM fencegate.keep_parse(d, g::TEXT, g.expires_at_ms); END IF;
  RETURN g;
END $fg$;

-- parsed_status is parse_status(b) through the parse cache, as
-- parsed_grant; a status is kept until its validUntil.
CREATE OR REPLACE FUNCTION fencegate.parsed_status(b TEXT) RETURNS fencegate.status_t LANGUAGE plpgsql AS $fg$
DECLARE
  d BYTEA := sha256(convert_to(b, 'UTF8'));
  t TEXT;
  s fencegate.status_t;
BEGIN
  SELECT p.parse INTO t FROM fencegate.parsed p WHERE p.digest = d;
  IF t IS NOT NULL THEN RETURN t::fencegate.status_t; END IF;
  s := fencegate.parse_status(b);
  IF s.state IS NOT NULL THEN PERFORM fencegate.keep_parse(d, s::TEXT, s.valid_until_ms); END IF;
  RETURN s;
END $fg$;

-- keep_parse stores a parse in the cache, in the caller's transaction
-- (a rollback takes it back), unless its time is past already, and drops
-- up to 8 entries a minute past their time (the cache holds about the
-- grants and statuses in use). It never waits on another writer: an
-- entry another transaction is storing or dropping is left to it (the
-- advisory lock on the digest, SKIP LOCKED); and as an entry is stored
-- only before its time and dropped a minute after it, one being stored
-- again after a miss cannot meet the same one being dropped.
CREATE OR REPLACE FUNCTION fencegate.keep_parse(d BYTEA, parse TEXT, until_ms BIGINT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  now_ms BIGINT := fencegate.now_ms();
BEGIN
  DELETE FROM fencegate.parsed WHERE digest IN (SELECT p.digest FROM fencegate.parsed p WHERE p.until_ms < now_ms - 60000
    ORDER BY p.until_ms LIMIT 8 FOR UPDATE SKIP LOCKED);
  IF keep_parse.until_ms >= now_ms AND pg_try_advisory_xact_lock(('x' || encode(substr(d, 1, 8), 'hex'))::BIT(64)::BIGINT) THEN
    INSERT INTO fencegate.parsed VALUES (d, parse, keep_parse.until_ms) ON CONFLICT DO NOTHING;
  END IF;
END $fg$;

-- envelope_t is a decoded envelope (gate.Mutation); gate_proofs is its
-- gateProofs member as sent (NULL when absent).
CREATE TYPE fencegate.envelope_t AS (
  resource TEXT, lease TEXT, operation_id TEXT, fence BIGINT, seq BIGINT, payload_digest TEXT,
  grant_text TEXT, grant_proof TEXT, status_text TEXT, status_proof TEXT, gate_proofs JSONB
);

-- parse_envelope is gate.DecodeMutation: exactly one JSON object of at
-- most gate.MutationJSONBytesMax bytes, no unknown or duplicate members
-- (at any depth), strings as strings, counters as integers, and a valid
-- envelope (gate.Mutation.Validate). Anything else raises MALFORMED.
--
-- It reads the members once (json_each, in document order, duplicates
-- kept) and then looks at the arrays: a json value is text, and every
-- -> or ->> would parse it again. The checks, their order and their
-- reasons are those of the plainer parser of schema version 3, which
-- read each member with -> (upgrade_fuzz_test.go holds the two to the
-- same answers): per member in order, unknown, then duplicate, then the
-- type of the member's last value (what -> returns for a duplicated
-- name); values are unescaped only when every member passed.
--
-- An envelope whose members are all known, none twice, each of its type
-- (every envelope a client sends) is read by one query (clean): the
-- member-by-member walk then finds nothing, and the values are the same.
-- Only an envelope that query does not pass takes the walk, for its
-- reason.
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
  clean BOOLEAN := FALSE;
  gp JSON;
BEGIN
  IF envelope IS NULL OR octet_length(envelope) > 24576 THEN
    PERFORM fencegate.reject('MALFORMED', 'json: envelope missing or above 24576 bytes', NULL);
  END IF;
  BEGIN
    j := envelope::json;
    IF json_typeof(j) = 'object' THEN
      SELECT count(*) = count(DISTINCT t.key) AND coalesce(bool_and(CASE
          WHEN t.key IN ('fenceToken', 'segmentSeq') THEN json_typeof(t.value) IN ('number', 'null')
          WHEN t.key = 'gateProofs' THEN json_typeof(t.value) IN ('array', 'null')
          WHEN t.key IN ('resource', 'lease', 'operationId', 'payloadDigest', 'grant', 'grantProof', 'status', 'statusProof')
            THEN json_typeof(t.value) IN ('string', 'null')
          ELSE FALSE END), TRUE),
        coalesce(max(t.value::text) FILTER (WHERE t.key = 'fenceToken'), '0'),
        coalesce(max(t.value::text) FILTER (WHERE t.key = 'segmentSeq'), '0'),
        coalesce(max(t.value #>> '{}') FILTER (WHERE t.key = 'resource'), ''),
        coalesce(max(t.value #>> '{}') FILTER (WHERE t.key = 'lease'), ''),
        coalesce(max(t.value #>> '{}') FILTER (WHERE t.key = 'operationId'), ''),
        coalesce(max(t.value #>> '{}') FILTER (WHERE t.key = 'payloadDigest'), ''),
        coalesce(max(t.value #>> '{}') FILTER (WHERE t.key = 'grant'), ''),
        coalesce(max(t.value #>> '{}') FILTER (WHERE t.key = 'grantProof'), ''),
        coalesce(max(t.value #>> '{}') FILTER (WHERE t.key = 'status'), ''),
        coalesce(max(t.value #>> '{}') FILTER (WHERE t.key = 'statusProof'), ''),
        max(t.value::text) FILTER (WHERE t.key = 'gateProofs')::json
        INTO clean, fence, seq, e.resource, e.lease, e.operation_id, e.payload_digest, e.grant_text, e.grant_proof,
          e.status_text, e.status_proof, gp
        FROM json_each(j) AS t(key, value);
    END IF;
    IF clean THEN
      e.fence := CASE WHEN fence ~ '^[0-9]+$' AND length(fence) <= 19 AND fence::numeric <= 9223372036854775807 THEN fence::bigint END;
      e.seq := CASE WHEN seq ~ '^[0-9]+$' AND length(seq) <= 19 AND seq::numeric <= 9223372036854775807 THEN seq::bigint END;
      e.gate_proofs := gp::jsonb;
      IF gp IS NOT NULL THEN why := fencegate.gate_proofs_shape(gp); END IF;
    END IF;
  EXCEPTION WHEN OTHERS THEN
    clean := FALSE;
  END;
  IF NOT clean THEN
    e := NULL; why := NULL;
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
  END IF;
  IF why IS NULL THEN
    why := CASE
      WHEN NOT fencegate.valid_resource(e.resource) THEN 'field resource'
      WHEN NOT fencegate.valid_token(e.lease) THEN 'field lease'
      WHEN NOT fencegate.valid_token(e.operation_id) THEN 'field operationId'
      WHEN e.fence IS NULL OR e.fence < 1 THEN 'field fenceToken: outside 1..9223372036854775807'
      WHEN e.seq IS NULL OR e.seq < 1 THEN 'field segmentSeq: outside 1..9223372036854775807'
      WHEN fencegate.parse_digest(e.payload_digest) IS NULL OR e.payload_digest = 'sha256:' || repeat('0', 64) THEN 'field payloadDigest'
      WHEN octet_length(e.grant_text) NOT BETWEEN 1 AND 4096 THEN 'field grant: want 1..4096 bytes'
      WHEN octet_length(e.grant_proof) NOT BETWEEN 1 AND 512 THEN 'field grantProof: want 1..512 bytes'
      WHEN octet_length(e.status_text) > 4096 OR octet_length(e.status_proof) > 256 THEN 'field status: above its limits'
      WHEN (e.status_text = '') <> (e.status_proof = '') THEN 'field status: status and statusProof must both be present or both be empty'
      WHEN e.gate_proofs IS NOT NULL THEN fencegate.gate_proofs_rules(e.gate_proofs, e.status_text <> '')
    END;
  END IF;
  IF why IS NOT NULL THEN
    PERFORM fencegate.reject('MALFORMED', why, jsonb_build_object('resource', e.resource, 'fenceToken', e.fence, 'segmentSeq', e.seq));
  END IF;
  RETURN e;
END $fg$;

-- gate_proofs_shape is why gateProofs does not decode strictly (an array
-- of objects with the members gate, grantProof and statusProof, each a
-- string or null, none twice), or NULL when it does or is absent.
CREATE OR REPLACE FUNCTION fencegate.gate_proofs_shape(j JSON) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  p JSON;
  k TEXT;
  seen TEXT[];
BEGIN
  IF j IS NULL OR json_typeof(j) = 'null' THEN RETURN NULL; END IF;
  FOR p IN SELECT json_array_elements(j) LOOP
    IF json_typeof(p) <> 'object' THEN RETURN 'field gateProofs: want objects'; END IF;
    seen := '{}';
    FOR k IN SELECT json_object_keys(p) LOOP
      IF k <> ALL (ARRAY['gate', 'grantProof', 'statusProof']) THEN RETURN format('unknown field gateProofs.%I', k); END IF;
      IF k = ANY (seen) THEN RETURN format('duplicate field gateProofs.%I', k); END IF;
      IF json_typeof(p -> k) NOT IN ('string', 'null') THEN RETURN format('field gateProofs.%I has the wrong type', k); END IF;
      seen := seen || k;
    END LOOP;
  END LOOP;
  RETURN NULL;
END $fg$;

-- gate_proofs_rules is grant.ValidateGateProofs over a decoded gateProofs
-- (NULL: none): why it is invalid, or NULL. has_status: the envelope
-- carries a status.
CREATE OR REPLACE FUNCTION fencegate.gate_proofs_rules(ps JSONB, has_status BOOLEAN) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  p JSONB;
  gates TEXT[] := '{}';
  gate TEXT; gp TEXT; sp TEXT;
BEGIN
  IF ps IS NULL OR jsonb_typeof(ps) = 'null' THEN RETURN NULL; END IF;
  IF jsonb_array_length(ps) > 8 THEN RETURN format('field gateProofs: %s entries, limit 8', jsonb_array_length(ps)); END IF;
  FOR p IN SELECT jsonb_array_elements(ps) LOOP
    gate := coalesce(p ->> 'gate', ''); gp := coalesce(p ->> 'grantProof', ''); sp := coalesce(p ->> 'statusProof', '');
    IF NOT (gate ~ '^[A-Za-z0-9._-]+$' AND length(gate) <= 64) THEN RETURN 'field gateProofs: gate'; END IF;
    IF gate = ANY (gates) THEN RETURN format('field gateProofs: gate %s named twice', gate); END IF;
    gates := gates || gate;
    IF octet_length(gp) NOT BETWEEN 1 AND 256 THEN RETURN 'field gateProofs: grantProof: want 1..256 bytes'; END IF;
    IF octet_length(sp) > 256 THEN RETURN 'field gateProofs: statusProof: above 256 bytes'; END IF;
    IF (sp <> '') <> has_status THEN RETURN 'field gateProofs: statusProof must be present exactly when a status is'; END IF;
  END LOOP;
  RETURN NULL;
END $fg$;
