-- fencegate PostgreSQL-native gate, schema version 1, part 1: the schema,
-- its tables, and the strict parsers of lockGrant.v1, grantStatus.v1,
-- proofs and the envelope (the same rules as package grant and
-- gate.DecodeMutation). {crypto} is the schema pgcrypto lives in.

CREATE TABLE fencegate.settings (
  id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
  default_mode TEXT NOT NULL DEFAULT 'enforce' CHECK (default_mode IN ('shadow', 'enforce')),
  status_skew_ms BIGINT NOT NULL DEFAULT 500 CHECK (status_skew_ms >= 0),
  -- the trust bundle of HMAC keys: its version and revokedBelowEpoch
  bundle_version BIGINT NOT NULL DEFAULT 0,
  revoked_below_epoch BIGINT NOT NULL DEFAULT 0,
  -- grant operation classes this gate accepts; empty: every class
  operation_classes TEXT[] NOT NULL DEFAULT '{}',
  -- tests only: the gate clock in Unix milliseconds; NULL is the
  -- database server's clock. Only the gate owner can set it.
  clock_ms BIGINT
);
INSERT INTO fencegate.settings DEFAULT VALUES;

-- keys: the HMAC-SHA256 keys this gate verifies proofs under, as a trust
-- bundle lists them. The application's roles cannot read this table.
CREATE TABLE fencegate.keys (
  key_id TEXT PRIMARY KEY CHECK (key_id ~ '^[A-Za-z0-9._-]{1,64}$'),
  secret BYTEA NOT NULL CHECK (octet_length(secret) >= 32),
  min_epoch BIGINT NOT NULL CHECK (min_epoch >= 1),
  max_epoch BIGINT NOT NULL DEFAULT 0 CHECK (max_epoch >= 0),
  state TEXT NOT NULL CHECK (state IN ('active', 'verify-only', 'retired'))
);

-- callers maps a database login role (session_user) to the workload
-- identity a grant names as its owner.
CREATE TABLE fencegate.callers (
  role_name TEXT PRIMARY KEY,
  identity TEXT NOT NULL
);

CREATE TABLE fencegate.resources (
  resource TEXT PRIMARY KEY,
  mode TEXT NOT NULL CHECK (mode IN ('shadow', 'enforce')),
  highest_fence BIGINT NOT NULL DEFAULT 0,
  root TEXT NOT NULL DEFAULT '',
  last_seq BIGINT NOT NULL DEFAULT 0,
  grant_digest TEXT NOT NULL DEFAULT '',
  grant_issued_at_ms BIGINT, -- NULL: unknown
  min_policy_generation BIGINT NOT NULL DEFAULT 0,
  paused BOOLEAN NOT NULL DEFAULT FALSE,
  paused_reason TEXT NOT NULL DEFAULT '',
  fence_floor BIGINT NOT NULL DEFAULT 0,
  floor_at_ms BIGINT, -- NULL: never resumed
  gated_writes BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE fencegate.receipts (
  resource TEXT NOT NULL,
  fence BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  operation_id TEXT NOT NULL,
  operation_root TEXT NOT NULL,
  payload_digest TEXT NOT NULL,
  grant_digest TEXT NOT NULL,
  accepted_at_ms BIGINT NOT NULL,
  mode TEXT NOT NULL,
  PRIMARY KEY (resource, fence, seq)
);
CREATE INDEX receipts_by_operation ON fencegate.receipts (resource, operation_id);

CREATE TABLE fencegate.quarantine (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  resource TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL, operation_id TEXT NOT NULL,
  payload_digest TEXT NOT NULL, grant_digest TEXT NOT NULL, original_receipt TEXT NOT NULL,
  reason TEXT NOT NULL, at_ms BIGINT NOT NULL
);
CREATE TABLE fencegate.alarms (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  resource TEXT NOT NULL, kind TEXT NOT NULL, fence BIGINT NOT NULL, highest_fence BIGINT NOT NULL,
  grant_digest TEXT NOT NULL, detail TEXT NOT NULL, at_ms BIGINT NOT NULL
);
CREATE TABLE fencegate.shadow_log (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  resource TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL, operation_id TEXT NOT NULL,
  outcome TEXT NOT NULL, reason TEXT NOT NULL, at_ms BIGINT NOT NULL
);
CREATE TABLE fencegate.operator_actions (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  subject TEXT NOT NULL, action TEXT NOT NULL, operator TEXT NOT NULL, detail TEXT NOT NULL, at_ms BIGINT NOT NULL
);
CREATE TABLE fencegate.protected (
  table_name REGCLASS PRIMARY KEY,
  mode TEXT NOT NULL CHECK (mode IN ('shadow', 'enforce')),
  ungated BIGINT NOT NULL DEFAULT 0
);
-- tx_accepts marks the transactions in which fencegate.apply let a
-- business change proceed: the coverage guard of protected tables reads
-- it. A deferred trigger removes the mark at commit; a rollback removes it
-- with everything else. The application cannot write it.
CREATE TABLE fencegate.tx_accepts (
  xid XID8 PRIMARY KEY DEFAULT pg_current_xact_id(),
  resource TEXT NOT NULL,
  writes BIGINT NOT NULL DEFAULT 0
);

-- The database refuses what the gate never does.
CREATE FUNCTION fencegate.refuse() RETURNS trigger LANGUAGE plpgsql AS $fg$
BEGIN
  RAISE EXCEPTION 'fencegate: %', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
END $fg$;
CREATE TRIGGER fence_never_decreases BEFORE UPDATE OF highest_fence ON fencegate.resources
  FOR EACH ROW WHEN (NEW.highest_fence < OLD.highest_fence) EXECUTE FUNCTION fencegate.refuse('highest_fence never decreases');
CREATE TRIGGER receipts_never_changed BEFORE UPDATE OR DELETE ON fencegate.receipts
  FOR EACH ROW EXECUTE FUNCTION fencegate.refuse('receipts are never updated or deleted');
CREATE TRIGGER receipts_never_truncated BEFORE TRUNCATE ON fencegate.receipts
  FOR EACH STATEMENT EXECUTE FUNCTION fencegate.refuse('receipts are never deleted');

-- now_ms is the gate's clock: the database server's, in Unix milliseconds
-- (truncated), unless a test set settings.clock_ms.
CREATE FUNCTION fencegate.now_ms() RETURNS BIGINT LANGUAGE sql STABLE AS $fg$
  SELECT coalesce((SELECT clock_ms FROM fencegate.settings),
    floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
$fg$;

-- stamp formats Unix milliseconds as grant.TimeLayout; NULL is 'unknown'.
CREATE FUNCTION fencegate.stamp(ms BIGINT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN ms IS NULL THEN 'unknown'
    ELSE to_char((timestamp '1970-01-01' + ms * interval '1 millisecond'), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END
$fg$;

-- Identifier rules of package grant (ids.go).
CREATE FUNCTION fencegate.segments_ok(s TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $fg$
  SELECT s !~ '(^|/)\.{0,2}(/|$)'
$fg$;
CREATE FUNCTION fencegate.valid_resource(s TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $fg$
  SELECT s IS NOT NULL AND s ~ '^[a-z0-9._/-]+$' AND octet_length(s) <= 256 AND fencegate.segments_ok(s)
$fg$;
CREATE FUNCTION fencegate.valid_token(s TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $fg$
  SELECT s IS NOT NULL AND s ~ '^[A-Za-z0-9._:-]{1,128}$'
$fg$;
CREATE FUNCTION fencegate.valid_class(s TEXT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $fg$
  SELECT s IS NOT NULL AND s ~ '^[a-z0-9._-]{1,64}$'
$fg$;
CREATE FUNCTION fencegate.valid_owner(s TEXT) RETURNS BOOLEAN LANGUAGE plpgsql IMMUTABLE AS $fg$
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
  RETURN s ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';
END $fg$;

-- parse_uint: a canonical decimal uint64 (no sign, no leading zero), or NULL.
CREATE FUNCTION fencegate.parse_uint(s TEXT) RETURNS NUMERIC LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN s ~ '^(0|[1-9][0-9]{0,19})$' AND s::numeric <= 18446744073709551615 THEN s::numeric END
$fg$;

-- parse_time: a UTC instant in grant.TimeLayout with year 1970..9999, as
-- Unix milliseconds, or NULL.
CREATE FUNCTION fencegate.parse_time(s TEXT) RETURNS BIGINT LANGUAGE plpgsql IMMUTABLE AS $fg$
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
CREATE FUNCTION fencegate.parse_digest(s TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN s ~ '^sha256:[0-9a-f]{64}$' THEN s END
$fg$;

CREATE FUNCTION fencegate.digest_text(b BYTEA) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT 'sha256:' || encode(b, 'hex')
$fg$;

-- split_fields: the values of a canonical "name: value\n" message whose
-- names are exactly names in order, each value printable ASCII without
-- surrounding blanks; NULL otherwise.
CREATE FUNCTION fencegate.split_fields(b TEXT, names TEXT[]) RETURNS TEXT[] LANGUAGE plpgsql IMMUTABLE AS $fg$
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

CREATE TYPE fencegate.grant_t AS (
  resource TEXT, owner TEXT, request_id TEXT, lease TEXT, operation_root TEXT, operation_class TEXT,
  fence NUMERIC, backend_revision NUMERIC, policy_generation NUMERIC, issuer_epoch NUMERIC, ttl_ms NUMERIC,
  issued_at_ms BIGINT, expires_at_ms BIGINT
);

-- parse_grant: a lockGrant.v1 exactly as grant.ParseGrant accepts it, or NULL.
CREATE FUNCTION fencegate.parse_grant(b TEXT) RETURNS fencegate.grant_t LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  v TEXT[];
  g fencegate.grant_t;
BEGIN
  v := fencegate.split_fields(b, ARRAY['schema', 'resource', 'owner', 'requestId', 'lease', 'operationRoot',
    'operationClass', 'fenceToken', 'backendRevision', 'policyGeneration', 'issuerEpoch', 'ttlMs', 'issuedAt', 'expiresAt']);
  IF v IS NULL OR v[1] <> 'lockGrant.v1' THEN RETURN NULL; END IF;
  g := ROW(v[2], v[3], v[4], v[5], fencegate.parse_digest(v[6]), v[7], fencegate.parse_uint(v[8]), fencegate.parse_uint(v[9]),
    fencegate.parse_uint(v[10]), fencegate.parse_uint(v[11]), fencegate.parse_uint(v[12]),
    fencegate.parse_time(v[13]), fencegate.parse_time(v[14]));
  IF NOT (fencegate.valid_resource(g.resource) AND fencegate.valid_owner(g.owner) AND fencegate.valid_token(g.request_id)
      AND fencegate.valid_token(g.lease) AND fencegate.valid_class(g.operation_class))
    OR g.operation_root IS NULL OR g.fence IS NULL OR g.backend_revision IS NULL OR g.policy_generation IS NULL
    OR g.issuer_epoch IS NULL OR g.ttl_ms IS NULL OR g.issued_at_ms IS NULL OR g.expires_at_ms IS NULL
    OR g.operation_root = 'sha256:' || repeat('0', 64) OR g.fence = 0 OR g.backend_revision = 0
    OR g.issuer_epoch = 0 OR g.ttl_ms = 0 OR g.ttl_ms > 3153600000000
    OR g.expires_at_ms <> g.issued_at_ms + g.ttl_ms THEN
    RETURN NULL;
  END IF;
  RETURN g;
END $fg$;

CREATE TYPE fencegate.status_t AS (
  grant_digest TEXT, state TEXT, backend_revision NUMERIC, issuer_epoch NUMERIC, issued_at_ms BIGINT, valid_until_ms BIGINT
);

-- parse_status: a grantStatus.v1 exactly as grant.ParseStatus accepts it, or NULL.
CREATE FUNCTION fencegate.parse_status(b TEXT) RETURNS fencegate.status_t LANGUAGE plpgsql IMMUTABLE AS $fg$
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

-- b64url: canonical unpadded base64url of exactly n bytes, decoded, or NULL.
CREATE FUNCTION fencegate.b64url(s TEXT, n INT) RETURNS BYTEA LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  raw BYTEA;
BEGIN
  IF s IS NULL OR s !~ '^[A-Za-z0-9_-]*$' OR length(s) <> (4 * n + 2) / 3 THEN RETURN NULL; END IF;
  raw := decode(translate(s, '-_', '+/') || repeat('=', (4 - length(s) % 4) % 4), 'base64');
  IF octet_length(raw) <> n
    OR rtrim(translate(replace(encode(raw, 'base64'), E'\n', ''), '+/', '-_'), '=') <> s THEN
    RETURN NULL;
  END IF;
  RETURN raw;
END $fg$;

-- verify checks a proof over (schema, digest) for a message of issuer
-- epoch, as grant.Verifier.VerifyDigest does, against fencegate.keys and
-- settings.revoked_below_epoch. It returns NULL when the proof holds, else
-- the outcome and why: 'EPOCH_REVOKED: …' or 'BAD_PROOF: …'. Ed25519
-- proofs ("sig:") are refused: PostgreSQL cannot check them.
CREATE FUNCTION fencegate.verify(schema TEXT, digest BYTEA, epoch NUMERIC, proof TEXT) RETURNS TEXT
LANGUAGE plpgsql STABLE AS $fg$
DECLARE
  prefix TEXT; kid TEXT; enc TEXT; raw BYTEA;
  k fencegate.keys;
  revoked BIGINT;
BEGIN
  IF proof IS NULL OR octet_length(proof) > 256 OR proof !~ '^[^:]*:[^:]*:' THEN
    RETURN 'BAD_PROOF: malformed proof: want mac:<keyId>:<base64url>';
  END IF;
  prefix := split_part(proof, ':', 1);
  kid := split_part(proof, ':', 2);
  enc := substr(proof, length(prefix) + length(kid) + 3);
  IF prefix NOT IN ('sig', 'mac') THEN RETURN format('BAD_PROOF: malformed proof: unknown prefix %L', prefix); END IF;
  IF kid !~ '^[A-Za-z0-9._-]{1,64}$' THEN RETURN 'BAD_PROOF: malformed proof: key ID'; END IF;
  raw := fencegate.b64url(enc, CASE prefix WHEN 'sig' THEN 64 ELSE 32 END);
  IF raw IS NULL THEN RETURN 'BAD_PROOF: malformed proof: not canonical unpadded base64url of the right length'; END IF;
  SELECT * INTO k FROM fencegate.keys WHERE keys.key_id = kid;
  SELECT revoked_below_epoch INTO revoked FROM fencegate.settings;
  IF k.key_id IS NULL THEN RETURN format('BAD_PROOF: unknown key %L', kid); END IF;
  IF prefix <> 'mac' THEN RETURN format('BAD_PROOF: key %s is hmac-sha256, proof claims ed25519', kid); END IF;
  IF k.state = 'retired' THEN RETURN format('BAD_PROOF: key %s is retired', kid); END IF;
  IF epoch < revoked THEN RETURN format('EPOCH_REVOKED: epoch %s < revokedBelowEpoch %s', epoch, revoked); END IF;
  IF epoch < k.min_epoch OR k.max_epoch <> 0 AND epoch > k.max_epoch THEN
    RETURN format('BAD_PROOF: epoch %s not allowed for key %s', epoch, kid);
  END IF;
  IF {crypto}.hmac('fencegate/proof/v1'::bytea || '\x00'::bytea || convert_to(schema, 'UTF8') || '\x00'::bytea || digest,
      k.secret, 'sha256') <> raw THEN
    RETURN format('BAD_PROOF: bad signature: %s over %s (key %s)', schema, fencegate.digest_text(digest), kid);
  END IF;
  RETURN NULL;
END $fg$;

-- operation_root is grant.OperationRoot(resource, operationID).
CREATE FUNCTION fencegate.operation_root(resource TEXT, operation_id TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT fencegate.digest_text(sha256('fencegate/operationRoot/v1'::bytea || '\x00'::bytea
    || int8send(octet_length(resource)::bigint) || convert_to(resource, 'UTF8')
    || int8send(octet_length(operation_id)::bigint) || convert_to(operation_id, 'UTF8')))
$fg$;

-- receipt_id is gate.Receipt.ID over the receipt's fields.
CREATE FUNCTION fencegate.receipt_id(r fencegate.receipts, outcome TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT fencegate.digest_text(sha256('fencegate/receipt/v1'::bytea || '\x00'::bytea || convert_to(
    'resource: ' || r.resource || E'\n' || 'fenceToken: ' || r.fence || E'\n' || 'operationRoot: ' || r.operation_root || E'\n'
    || 'operationId: ' || r.operation_id || E'\n' || 'segmentSeq: ' || r.seq || E'\n' || 'payloadDigest: ' || r.payload_digest || E'\n'
    || 'grant: ' || r.grant_digest || E'\n' || 'acceptedAt: ' || fencegate.stamp(r.accepted_at_ms) || E'\n'
    || 'mode: ' || r.mode || E'\n' || 'outcome: ' || outcome || E'\n', 'UTF8')))
$fg$;

-- receipt_json is a receipt in gate's one JSON form (gate.DecodeReceipt).
CREATE FUNCTION fencegate.receipt_json(r fencegate.receipts) RETURNS JSONB LANGUAGE sql IMMUTABLE AS $fg$
  SELECT jsonb_build_object('id', fencegate.receipt_id(r, 'ACCEPTED'), 'resource', r.resource, 'fenceToken', r.fence,
    'operationRoot', r.operation_root, 'operationId', r.operation_id, 'segmentSeq', r.seq,
    'payloadDigest', r.payload_digest, 'grant', r.grant_digest, 'acceptedAt', fencegate.stamp(r.accepted_at_ms),
    'mode', r.mode, 'outcome', 'ACCEPTED')
$fg$;
