-- fencegate PostgreSQL-native gate, schema version 2, part 2: a grant's
-- own held statement is HELD evidence for an envelope without a status
-- proof (gate.Verified.OwnEvidence, StatusSource "grant"), judged as a
-- proof is; a status proof in the envelope wins. Replaces authenticate
-- and judge of version 1; everything else stands.

ALTER TYPE fencegate.verified ADD ATTRIBUTE status_from_grant BOOLEAN;

-- authenticate is gate.Policy.Authenticate for an envelope sent by the
-- workload identity caller: strict parse, proofs, binding, identity. It
-- raises BAD_PROOF, EPOCH_REVOKED, BINDING_MISMATCH or IDENTITY_MISMATCH.
CREATE OR REPLACE FUNCTION fencegate.authenticate(e fencegate.envelope_t, caller TEXT) RETURNS fencegate.verified
LANGUAGE plpgsql AS $fg$
DECLARE
  gd BYTEA := sha256(convert_to(e.grant_text, 'UTF8'));
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
  why := fencegate.verify('lockGrant.v1', gd, g.issuer_epoch, e.grant_proof);
  IF why IS NOT NULL THEN
    PERFORM fencegate.reject(split_part(why, ':', 1), 'grant proof: ' || substr(why, position(':' IN why) + 2), loc);
  END IF;
  IF e.status_text <> '' THEN
    s := fencegate.parse_status(e.status_text);
    IF s.state IS NULL THEN
      PERFORM fencegate.reject('BAD_PROOF', 'status does not parse as grantStatus.v1', loc);
    END IF;
    why := fencegate.verify('grantStatus.v1', sha256(convert_to(e.status_text, 'UTF8')), s.issuer_epoch, e.status_proof);
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
    -- (gate.Verified.OwnEvidence), HELD at issuedAt until heldUntil.
    RETURN ROW(e.resource, e.operation_id, e.fence, e.seq, e.payload_digest, fencegate.digest_text(gd), root,
      g.policy_generation, g.issued_at_ms, TRUE, 'HELD', g.issued_at_ms, g.held_until_ms, TRUE)::fencegate.verified;
  END IF;
  RETURN ROW(e.resource, e.operation_id, e.fence, e.seq, e.payload_digest, fencegate.digest_text(gd), root,
    g.policy_generation, g.issued_at_ms, e.status_text <> '', s.state, s.issued_at_ms, s.valid_until_ms, FALSE)::fencegate.verified;
END $fg$;

-- judge is StatusEvidence.judge for the envelope's own evidence (this
-- gate has no status querier): NULL when it proves HELD at now, else
-- 'OUTCOME|why'.
CREATE OR REPLACE FUNCTION fencegate.judge(v fencegate.verified, now_ms BIGINT, skew BIGINT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE
    WHEN NOT v.has_status THEN 'NOT_HELD|no status proof and no status querier configured'
    WHEN v.status_state <> 'HELD' THEN 'NOT_HELD|grant is ' || v.status_state || ' (status proof)'
    WHEN NOT (now_ms + skew < v.status_valid_ms) THEN format('PROOF_EXPIRED|%s %s, gate clock %s + skew bound %s ms',
      CASE WHEN v.status_from_grant THEN 'no status proof, and the grant''s held statement is valid until' ELSE 'status proof valid until' END,
      fencegate.stamp(v.status_valid_ms), fencegate.stamp(now_ms), skew)
  END
$fg$;
