-- The gate inside PostgreSQL, authentication (gate.Policy.Authenticate):
-- the proofs under this gate's own HMAC keys (PostgreSQL has no
-- Ed25519), the envelope bound to the grant, the caller the grant's
-- owner. Authentication never touches resource state.

-- b64url: canonical unpadded base64url of exactly n bytes, decoded, or NULL.
CREATE OR REPLACE FUNCTION fencegate.b64url(s TEXT, n INT) RETURNS BYTEA LANGUAGE plpgsql IMMUTABLE AS $fg$
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
--
-- As the Verifier does, it keeps what verified (fencegate.proofs, schema
-- version 9) until until_ms (the message's expiresAt or validUntil): a
-- proof whose (schema, digest, proof) verified before under the key it
-- names, while that key's secret is the same, skips the proof's form and
-- the HMAC, never the policy (the key's state and epochs, the
-- revocation), which is read with the key and the cache in one query.
-- Any other proof, a forged one beside a cached one included, is checked
-- in full, and stored only when it verifies.
CREATE OR REPLACE FUNCTION fencegate.verify(schema TEXT, digest BYTEA, epoch NUMERIC, proof TEXT, until_ms BIGINT) RETURNS TEXT
LANGUAGE plpgsql AS $fg$
DECLARE
  prefix TEXT; kid TEXT := split_part(proof, ':', 2); enc TEXT; raw BYTEA;
  k fencegate.keys;
  revoked BIGINT;
  ck BYTEA := sha256(convert_to(schema, 'UTF8') || '\x00'::bytea || digest || '\x00'::bytea || convert_to(proof, 'UTF8'));
  hit BOOLEAN;
BEGIN
  SELECT c.key_id, c.secret, c.min_epoch, c.max_epoch, c.state, s.revoked_below_epoch, coalesce(p.key_digest = sha256(c.secret), FALSE)
    INTO k.key_id, k.secret, k.min_epoch, k.max_epoch, k.state, revoked, hit
    FROM fencegate.settings s LEFT JOIN fencegate.keys c ON c.key_id = kid
      LEFT JOIN fencegate.proofs p ON p.id = ck AND p.key_id = c.key_id;
  IF NOT hit THEN
    IF proof IS NULL OR octet_length(proof) > 256 OR proof !~ '^[^:]*:[^:]*:' THEN
      RETURN 'BAD_PROOF: malformed proof: want mac:<keyId>:<base64url>';
    END IF;
    prefix := split_part(proof, ':', 1);
    enc := substr(proof, length(prefix) + length(kid) + 3);
    IF prefix NOT IN ('sig', 'mac') THEN RETURN format('BAD_PROOF: malformed proof: unknown prefix %L', prefix); END IF;
    IF NOT (kid ~ '^[A-Za-z0-9._-]+$' AND length(kid) <= 64) THEN RETURN 'BAD_PROOF: malformed proof: key ID'; END IF;
    raw := fencegate.b64url(enc, CASE prefix WHEN 'sig' THEN 64 ELSE 32 END);
    IF raw IS NULL THEN RETURN 'BAD_PROOF: malformed proof: not canonical unpadded base64url of the right length'; END IF;
    IF k.key_id IS NULL THEN RETURN format('BAD_PROOF: unknown key %L', kid); END IF;
    IF prefix <> 'mac' THEN RETURN format('BAD_PROOF: key %s is hmac-sha256, proof claims ed25519', kid); END IF;
  END IF;
  IF k.state = 'retired' THEN RETURN format('BAD_PROOF: key %s is retired', kid); END IF;
  IF epoch < revoked THEN RETURN format('EPOCH_REVOKED: epoch %s < revokedBelowEpoch %s', epoch, revoked); END IF;
  IF epoch < k.min_epoch OR k.max_epoch <> 0 AND epoch > k.max_epoch THEN
    RETURN format('BAD_PROOF: epoch %s not allowed for key %s', epoch, kid);
  END IF;
  IF NOT hit THEN
    IF {crypto}.hmac('fencegate/proof/v1'::bytea || '\x00'::bytea || convert_to(schema, 'UTF8') || '\x00'::bytea || digest,
        k.secret, 'sha256') <> raw THEN
      RETURN format('BAD_PROOF: bad signature: %s over %s (key %s)', schema, fencegate.digest_text(digest), kid);
    END IF;
    PERFORM fencegate.keep_proof(ck, kid, sha256(k.secret), epoch, until_ms);
  END IF;
  RETURN NULL;
END $fg$;

-- The proof cache (schema version 9, fencegate.proofs) is emptied by
-- every install, so that no entry outlives the verify that wrote it.
TRUNCATE fencegate.proofs;

-- keep_proof stores a proof that verified, as keep_parse stores a parse:
-- in the caller's transaction, unless its time is past already, pruning
-- up to 8 entries a minute past their time, never waiting on another
-- writer (an advisory try-lock on the entry, SKIP LOCKED).
CREATE OR REPLACE FUNCTION fencegate.keep_proof(id BYTEA, key_id TEXT, key_digest BYTEA, epoch NUMERIC, until_ms BIGINT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  now_ms BIGINT := fencegate.now_ms();
BEGIN
  DELETE FROM fencegate.proofs WHERE proofs.id IN (SELECT p.id FROM fencegate.proofs p WHERE p.until_ms < now_ms - 60000
    ORDER BY p.until_ms LIMIT 8 FOR UPDATE SKIP LOCKED);
  IF keep_proof.until_ms >= now_ms AND pg_try_advisory_xact_lock(('x' || encode(substr(keep_proof.id, 1, 8), 'hex'))::BIT(64)::BIGINT) THEN
    INSERT INTO fencegate.proofs VALUES (keep_proof.id, keep_proof.key_id, keep_proof.key_digest, keep_proof.epoch, keep_proof.until_ms)
      ON CONFLICT DO NOTHING;
  END IF;
END $fg$;

-- effective_proofs is pggate.EffectiveProofs: the grant and status proofs
-- authenticate checks. The first gateProofs pair whose grant proof is a
-- "mac:" proof under a key enrolled here (whatever its state: a retired
-- key's proof then fails as it should), else the single fields. It is
-- PL/pgSQL, not an SQL function, so that its query is planned once a
-- session, not once a call; an envelope without gateProofs runs no query.
CREATE OR REPLACE FUNCTION fencegate.effective_proofs(e fencegate.envelope_t) RETURNS TEXT[] LANGUAGE plpgsql STABLE AS $fg$
DECLARE
  pair TEXT[];
BEGIN
  IF jsonb_typeof(e.gate_proofs) = 'array' THEN
    SELECT ARRAY[coalesce(p ->> 'grantProof', ''), coalesce(p ->> 'statusProof', '')] INTO pair
    FROM jsonb_array_elements(e.gate_proofs) WITH ORDINALITY AS t(p, i)
    WHERE split_part(p ->> 'grantProof', ':', 1) = 'mac'
      AND EXISTS (SELECT 1 FROM fencegate.keys k WHERE k.key_id = split_part(p ->> 'grantProof', ':', 2))
    ORDER BY i LIMIT 1;
  END IF;
  RETURN coalesce(pair, ARRAY[e.grant_proof, e.status_proof]);
END $fg$;

-- operation_root is grant.OperationRoot(resource, operationID).
CREATE OR REPLACE FUNCTION fencegate.operation_root(resource TEXT, operation_id TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN fencegate.digest_text(sha256('fencegate/operationRoot/v1'::bytea || '\x00'::bytea
    || int8send(octet_length(resource)::bigint) || convert_to(resource, 'UTF8')
    || int8send(octet_length(operation_id)::bigint) || convert_to(operation_id, 'UTF8')));
END $fg$;

-- at is the location in a rejection's detail of envelope e, built only
-- when one is raised.
CREATE OR REPLACE FUNCTION fencegate.at(e fencegate.envelope_t) RETURNS JSONB LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN jsonb_build_object('resource', e.resource, 'fenceToken', e.fence, 'segmentSeq', e.seq);
END $fg$;

-- verified is an envelope that passed authentication (gate.Verified),
-- with its HELD evidence: the status proof it carries, else the grant's
-- own held statement (status_from_grant), else none (has_status FALSE).
CREATE TYPE fencegate.verified AS (
  resource TEXT, operation_id TEXT, fence BIGINT, seq BIGINT, payload_digest TEXT,
  grant_digest TEXT, root TEXT, policy_generation NUMERIC, grant_issued_ms BIGINT,
  has_status BOOLEAN, status_state TEXT, status_issued_ms BIGINT, status_valid_ms BIGINT,
  status_from_grant BOOLEAN
);

-- authenticate is gate.Policy.Authenticate for an envelope sent by the
-- workload identity caller, where the gate accepts the operation
-- classes classes (settings.operation_classes, read by the caller):
-- strict parse, proofs, binding, identity. It
-- raises BAD_PROOF, EPOCH_REVOKED, READ_GRANT, BINDING_MISMATCH or
-- IDENTITY_MISMATCH.
-- The proofs checked are effective_proofs (this gate's own pair from
-- gateProofs when the envelope carries one); without a status proof, a
-- grant's own held statement is its evidence (gate.Verified.OwnEvidence).
--
-- Most writes meet a grant and a status seen before: one query then
-- reads both parses (fencegate.parsed) and both proofs (fencegate.proofs,
-- keyed as verify keys them) with their keys, and admits them when each
-- is there, each key has the secret its proof verified under and its
-- policy passes now (state, epochs, revocation: verify's on a hit).
-- Anything else, a miss or a policy that fails, takes parsed_grant,
-- verify and parsed_status, which say why.
CREATE OR REPLACE FUNCTION fencegate.authenticate(e fencegate.envelope_t, caller TEXT, classes TEXT[]) RETURNS fencegate.verified
LANGUAGE plpgsql AS $fg$
DECLARE
  gd BYTEA := sha256(convert_to(e.grant_text, 'UTF8'));
  sd BYTEA := CASE WHEN e.status_text <> '' THEN sha256(convert_to(e.status_text, 'UTF8')) END;
  pr TEXT[] := fencegate.effective_proofs(e);
  g fencegate.grant_t;
  s fencegate.status_t;
  why TEXT;
  root TEXT;
  gt TEXT; st TEXT;
BEGIN
  SELECT pg.parse, ps.parse INTO gt, st
    FROM fencegate.settings x
      JOIN fencegate.parsed pg ON pg.digest = gd
      JOIN fencegate.proofs qg ON qg.id = sha256('lockGrant.v1'::bytea || '\x00'::bytea || gd || '\x00'::bytea || convert_to(pr[1], 'UTF8'))
      JOIN fencegate.keys kg ON kg.key_id = qg.key_id AND qg.key_digest = sha256(kg.secret) AND kg.state <> 'retired'
        AND qg.epoch >= x.revoked_below_epoch AND qg.epoch >= kg.min_epoch AND (kg.max_epoch = 0 OR qg.epoch <= kg.max_epoch)
      LEFT JOIN fencegate.parsed ps ON ps.digest = sd
      LEFT JOIN (fencegate.proofs qs JOIN fencegate.keys ks ON ks.key_id = qs.key_id)
        ON qs.id = sha256('grantStatus.v1'::bytea || '\x00'::bytea || sd || '\x00'::bytea || convert_to(pr[2], 'UTF8'))
        AND qs.key_digest = sha256(ks.secret) AND ks.state <> 'retired'
        AND qs.epoch >= x.revoked_below_epoch AND qs.epoch >= ks.min_epoch AND (ks.max_epoch = 0 OR qs.epoch <= ks.max_epoch)
    WHERE sd IS NULL OR ps.parse IS NOT NULL AND qs.id IS NOT NULL;
  IF FOUND THEN
    g := gt::fencegate.grant_t;
    s := st::fencegate.status_t;
  ELSE
    g := fencegate.parsed_grant(e.grant_text);
    IF g.resource IS NULL THEN
      PERFORM fencegate.reject('BAD_PROOF', 'grant does not parse as lockGrant.v1', fencegate.at(e));
    END IF;
    why := fencegate.verify('lockGrant.v1', gd, g.issuer_epoch, pr[1], g.expires_at_ms);
    IF why IS NOT NULL THEN
      PERFORM fencegate.reject(split_part(why, ':', 1), 'grant proof: ' || substr(why, position(':' IN why) + 2), fencegate.at(e));
    END IF;
    IF e.status_text <> '' THEN
      s := fencegate.parsed_status(e.status_text);
      IF s.state IS NULL THEN
        PERFORM fencegate.reject('BAD_PROOF', 'status does not parse as grantStatus.v1', fencegate.at(e));
      END IF;
      why := fencegate.verify('grantStatus.v1', sd, s.issuer_epoch, pr[2], s.valid_until_ms);
      IF why IS NOT NULL THEN
        PERFORM fencegate.reject(split_part(why, ':', 1), 'status proof: ' || substr(why, position(':' IN why) + 2), fencegate.at(e));
      END IF;
    END IF;
  END IF;
  IF e.status_text <> '' AND s.grant_digest <> fencegate.digest_text(gd) THEN
    PERFORM fencegate.reject('BINDING_MISMATCH', format('status is about grant %s, not %s', s.grant_digest, fencegate.digest_text(gd)), fencegate.at(e));
  END IF;
  -- A read/write lock reader's grant (resource NAME/_read, wire.ReadResource;
  -- schema version 10) never opens a gate for a write, whatever resource the
  -- envelope names: READ_GRANT, where gate.Policy.Authenticate checks it
  -- (after the proofs and the status's binding, before the envelope's).
  IF octet_length(g.resource) > 6 AND right(g.resource, 6) = '/_read' THEN
    PERFORM fencegate.reject('READ_GRANT', format('grant on %s is a read/write lock reader''s: only a writer''s grant may mutate', g.resource), fencegate.at(e));
  END IF;
  root := fencegate.operation_root(e.resource, e.operation_id);
  why := CASE
    WHEN e.resource <> g.resource THEN format('resource %L, grant is for %L', e.resource, g.resource)
    WHEN e.lease <> g.lease THEN format('lease %L, grant has %L', e.lease, g.lease)
    WHEN root <> g.operation_root THEN format('operation root of %L is %s, grant binds %s', e.operation_id, root, g.operation_root)
    WHEN e.fence <> g.fence THEN format('fence %s, grant has %s', e.fence, g.fence)
  END;
  IF why IS NOT NULL THEN PERFORM fencegate.reject('BINDING_MISMATCH', why, fencegate.at(e)); END IF;
  IF cardinality(classes) > 0 AND g.operation_class <> ALL (classes) THEN
    PERFORM fencegate.reject('BINDING_MISMATCH', format('operation class %L not allowed by this gate', g.operation_class), fencegate.at(e));
  END IF;
  IF caller IS DISTINCT FROM g.owner THEN
    PERFORM fencegate.reject('IDENTITY_MISMATCH', format('caller %L (role %L) is not the grant owner %L',
      coalesce(caller, '(no identity mapped)'), session_user, g.owner), fencegate.at(e));
  END IF;
  IF e.status_text = '' AND g.held_until_ms IS NOT NULL THEN
    -- No status proof: the grant's own held statement is the evidence
    -- (gate.Verified.OwnEvidence, version 2), HELD at issuedAt until heldUntil.
    RETURN ROW(e.resource, e.operation_id, e.fence, e.seq, e.payload_digest, fencegate.digest_text(gd), root,
      g.policy_generation, g.issued_at_ms, TRUE, 'HELD', g.issued_at_ms, g.held_until_ms, TRUE)::fencegate.verified;
  END IF;
  RETURN ROW(e.resource, e.operation_id, e.fence, e.seq, e.payload_digest, fencegate.digest_text(gd), root,
    g.policy_generation, g.issued_at_ms, e.status_text <> '', s.state, s.issued_at_ms, s.valid_until_ms, FALSE)::fencegate.verified;
END $fg$;
