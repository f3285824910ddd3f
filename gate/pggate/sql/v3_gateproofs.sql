-- fencegate PostgreSQL-native gate, schema version 3: per-gate proofs.
-- The registry may send, beside its own proofs (Ed25519 as a rule, which
-- PostgreSQL cannot check), each enrolled gate's own HMAC proofs of the
-- grant and the status (grant.GateProof). The envelope carries them as
-- "gateProofs": [{"gate", "grantProof", "statusProof"}]; authenticate
-- checks the first pair whose grant proof is a "mac:" proof under a key
-- this gate has enrolled, else the envelope's single proof fields
-- (pggate.EffectiveProofs is the same rule in Go). Nothing else changes:
-- a key of another gate is not enrolled here, so its proofs are never
-- picked, and the single fields then fail as BAD_PROOF.

ALTER TYPE fencegate.envelope_t ADD ATTRIBUTE gate_proofs JSONB;

-- gate_proofs_shape is why gateProofs does not decode strictly (an array
-- of objects with the members gate, grantProof and statusProof, each a
-- string or null, none twice), or NULL when it does or is absent.
CREATE FUNCTION fencegate.gate_proofs_shape(j JSON) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
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
CREATE FUNCTION fencegate.gate_proofs_rules(ps JSONB, has_status BOOLEAN) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  p JSONB;
  gates TEXT[] := '{}';
  gate TEXT; gp TEXT; sp TEXT;
BEGIN
  IF ps IS NULL OR jsonb_typeof(ps) = 'null' THEN RETURN NULL; END IF;
  IF jsonb_array_length(ps) > 8 THEN RETURN format('field gateProofs: %s entries, limit 8', jsonb_array_length(ps)); END IF;
  FOR p IN SELECT jsonb_array_elements(ps) LOOP
    gate := coalesce(p ->> 'gate', ''); gp := coalesce(p ->> 'grantProof', ''); sp := coalesce(p ->> 'statusProof', '');
    IF gate !~ '^[A-Za-z0-9._-]{1,64}$' THEN RETURN 'field gateProofs: gate'; END IF;
    IF gate = ANY (gates) THEN RETURN format('field gateProofs: gate %s named twice', gate); END IF;
    gates := gates || gate;
    IF octet_length(gp) NOT BETWEEN 1 AND 256 THEN RETURN 'field gateProofs: grantProof: want 1..256 bytes'; END IF;
    IF octet_length(sp) > 256 THEN RETURN 'field gateProofs: statusProof: above 256 bytes'; END IF;
    IF (sp <> '') <> has_status THEN RETURN 'field gateProofs: statusProof must be present exactly when a status is'; END IF;
  END LOOP;
  RETURN NULL;
END $fg$;

-- parse_envelope is gate.DecodeMutation: exactly one JSON object of at
-- most gate.MutationJSONBytesMax bytes, no unknown or duplicate members
-- (at any depth), strings as strings, counters as integers, and a valid
-- envelope (gate.Mutation.Validate). Anything else raises MALFORMED.
CREATE OR REPLACE FUNCTION fencegate.parse_envelope(envelope TEXT) RETURNS fencegate.envelope_t LANGUAGE plpgsql AS $fg$
DECLARE
  j JSON;
  k TEXT;
  seen TEXT[] := '{}';
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
      FOR k IN SELECT json_object_keys(j) LOOP
        IF k <> ALL (ARRAY['resource', 'lease', 'operationId', 'fenceToken', 'segmentSeq', 'payloadDigest',
            'grant', 'grantProof', 'status', 'statusProof', 'gateProofs']) THEN
          why := format('unknown field %I', k);
        ELSIF k = ANY (seen) THEN
          why := format('duplicate field %I', k);
        ELSIF k IN ('fenceToken', 'segmentSeq') AND json_typeof(j -> k) NOT IN ('number', 'null')
          OR k = 'gateProofs' AND json_typeof(j -> k) NOT IN ('array', 'null')
          OR k NOT IN ('fenceToken', 'segmentSeq', 'gateProofs') AND json_typeof(j -> k) NOT IN ('string', 'null') THEN
          why := format('field %I has the wrong type', k);
        END IF;
        EXIT WHEN why IS NOT NULL;
        seen := seen || k;
      END LOOP;
      IF why IS NULL THEN
        fence := coalesce((j -> 'fenceToken')::text, '0');
        seq := coalesce((j -> 'segmentSeq')::text, '0');
        e := ROW(coalesce(j ->> 'resource', ''), coalesce(j ->> 'lease', ''), coalesce(j ->> 'operationId', ''),
          CASE WHEN fence ~ '^[0-9]{1,19}$' AND fence::numeric <= 9223372036854775807 THEN fence::bigint END,
          CASE WHEN seq ~ '^[0-9]{1,19}$' AND seq::numeric <= 9223372036854775807 THEN seq::bigint END,
          coalesce(j ->> 'payloadDigest', ''), coalesce(j ->> 'grant', ''), coalesce(j ->> 'grantProof', ''),
          coalesce(j ->> 'status', ''), coalesce(j ->> 'statusProof', ''), (j -> 'gateProofs')::jsonb);
        why := fencegate.gate_proofs_shape(j -> 'gateProofs');
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

-- effective_proofs is pggate.EffectiveProofs: the grant and status proofs
-- authenticate checks. The first gateProofs pair whose grant proof is a
-- "mac:" proof under a key enrolled here (whatever its state: a retired
-- key's proof then fails as it should), else the single fields.
CREATE FUNCTION fencegate.effective_proofs(e fencegate.envelope_t) RETURNS TEXT[] LANGUAGE sql STABLE AS $fg$
  SELECT coalesce((
    SELECT ARRAY[coalesce(p ->> 'grantProof', ''), coalesce(p ->> 'statusProof', '')]
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(e.gate_proofs) = 'array' THEN e.gate_proofs ELSE '[]'::jsonb END)
      WITH ORDINALITY AS t(p, i)
    WHERE split_part(p ->> 'grantProof', ':', 1) = 'mac'
      AND EXISTS (SELECT 1 FROM fencegate.keys k WHERE k.key_id = split_part(p ->> 'grantProof', ':', 2))
    ORDER BY i LIMIT 1), ARRAY[e.grant_proof, e.status_proof])
$fg$;

-- authenticate is gate.Policy.Authenticate for an envelope sent by the
-- workload identity caller: strict parse, proofs, binding, identity. It
-- raises BAD_PROOF, EPOCH_REVOKED, BINDING_MISMATCH or IDENTITY_MISMATCH.
-- Version 3: the proofs checked are effective_proofs (this gate's own
-- pair from gateProofs when the envelope carries one); the rest is
-- version 2's (a grant's own held statement as evidence).
CREATE OR REPLACE FUNCTION fencegate.authenticate(e fencegate.envelope_t, caller TEXT) RETURNS fencegate.verified
LANGUAGE plpgsql AS $fg$
DECLARE
  gd BYTEA := sha256(convert_to(e.grant_text, 'UTF8'));
  pr TEXT[] := fencegate.effective_proofs(e);
  g fencegate.grant_t;
  s fencegate.status_t;
  why TEXT;
  root TEXT;
  classes TEXT[];
  loc JSONB := jsonb_build_object('resource', e.resource, 'fenceToken', e.fence, 'segmentSeq', e.seq);
BEGIN
  g := fencegate.parse_grant(e.grant_text);
  IF g.resource IS NULL THEN
    PERFORM fencegate.reject('BAD_PROOF', 'grant does not parse as lockGrant.v1', loc);
  END IF;
  why := fencegate.verify('lockGrant.v1', gd, g.issuer_epoch, pr[1]);
  IF why IS NOT NULL THEN
    PERFORM fencegate.reject(split_part(why, ':', 1), 'grant proof: ' || substr(why, position(':' IN why) + 2), loc);
  END IF;
  IF e.status_text <> '' THEN
    s := fencegate.parse_status(e.status_text);
    IF s.state IS NULL THEN
      PERFORM fencegate.reject('BAD_PROOF', 'status does not parse as grantStatus.v1', loc);
    END IF;
    why := fencegate.verify('grantStatus.v1', sha256(convert_to(e.status_text, 'UTF8')), s.issuer_epoch, pr[2]);
    IF why IS NOT NULL THEN
      PERFORM fencegate.reject(split_part(why, ':', 1), 'status proof: ' || substr(why, position(':' IN why) + 2), loc);
    END IF;
    IF s.grant_digest <> fencegate.digest_text(gd) THEN
      PERFORM fencegate.reject('BINDING_MISMATCH', format('status is about grant %s, not %s', s.grant_digest, fencegate.digest_text(gd)), loc);
    END IF;
  END IF;
  root := fencegate.operation_root(e.resource, e.operation_id);
  why := CASE
    WHEN e.resource <> g.resource THEN format('resource %L, grant is for %L', e.resource, g.resource)
    WHEN e.lease <> g.lease THEN format('lease %L, grant has %L', e.lease, g.lease)
    WHEN root <> g.operation_root THEN format('operation root of %L is %s, grant binds %s', e.operation_id, root, g.operation_root)
    WHEN e.fence <> g.fence THEN format('fence %s, grant has %s', e.fence, g.fence)
  END;
  IF why IS NOT NULL THEN PERFORM fencegate.reject('BINDING_MISMATCH', why, loc); END IF;
  SELECT operation_classes INTO classes FROM fencegate.settings;
  IF cardinality(classes) > 0 AND g.operation_class <> ALL (classes) THEN
    PERFORM fencegate.reject('BINDING_MISMATCH', format('operation class %L not allowed by this gate', g.operation_class), loc);
  END IF;
  IF caller IS DISTINCT FROM g.owner THEN
    PERFORM fencegate.reject('IDENTITY_MISMATCH', format('caller %L (role %L) is not the grant owner %L',
      coalesce(caller, '(no identity mapped)'), session_user, g.owner), loc);
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

-- Privileges: the functions above are the owner's alone (a new function
-- is PUBLIC's to call until revoked); apply and record, which call them,
-- keep their SECURITY DEFINER and fencegate_writer's grant.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA fencegate FROM PUBLIC;
