-- fencegate PostgreSQL-native gate, schema version 1, part 2: the
-- envelope, authentication (gate.Policy.Authenticate) and the decision
-- (gate.Decide, gate/regression.go), as pure functions.

-- reject raises the outcome's SQLSTATE (docs/formats.md lists them) with
-- the outcome code first in the message and a JSON detail.
CREATE FUNCTION fencegate.sqlstate(outcome TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE outcome
    WHEN 'REPLAYED' THEN 'FG100'
    WHEN 'MALFORMED' THEN 'FG001' WHEN 'BAD_PROOF' THEN 'FG002' WHEN 'BINDING_MISMATCH' THEN 'FG003'
    WHEN 'IDENTITY_MISMATCH' THEN 'FG004' WHEN 'NOT_HELD' THEN 'FG005' WHEN 'EPOCH_REVOKED' THEN 'FG006'
    WHEN 'POLICY_STALE' THEN 'FG007' WHEN 'PROOF_EXPIRED' THEN 'FG008' WHEN 'STALE_OWNER' THEN 'FG009'
    WHEN 'SEGMENT_GAP' THEN 'FG010' WHEN 'ROOT_MISMATCH' THEN 'FG011' WHEN 'QUARANTINED' THEN 'FG012'
    WHEN 'FENCE_REGRESSION' THEN 'FG013' WHEN 'RESOURCE_PAUSED' THEN 'FG014'
    ELSE 'FG099' END
$fg$;

CREATE FUNCTION fencegate.reject(outcome TEXT, reason TEXT, detail JSONB) RETURNS VOID LANGUAGE plpgsql AS $fg$
BEGIN
  RAISE EXCEPTION USING ERRCODE = fencegate.sqlstate(outcome),
    MESSAGE = 'fencegate: ' || outcome || ': ' || reason,
    DETAIL = (jsonb_build_object('outcome', outcome, 'reason', reason) || coalesce(detail, '{}'::jsonb))::text,
    HINT = CASE
      WHEN outcome = 'REPLAYED' THEN 'the write already stands: roll back and treat it as done (DETAIL has the original receipt)'
      WHEN coalesce((detail ->> 'recorded')::boolean, FALSE) THEN 'roll back, then SELECT fencegate.record(envelope, payload_digest) in a new transaction to keep the alarm, quarantine or pause'
      ELSE 'roll back: nothing was written' END;
END $fg$;

CREATE TYPE fencegate.envelope_t AS (
  resource TEXT, lease TEXT, operation_id TEXT, fence BIGINT, seq BIGINT, payload_digest TEXT,
  grant_text TEXT, grant_proof TEXT, status_text TEXT, status_proof TEXT
);

-- parse_envelope is gate.DecodeMutation: exactly one JSON object of at
-- most gate.MutationJSONBytesMax bytes, no unknown or duplicate members,
-- strings as strings, counters as integers, and a valid envelope
-- (gate.Mutation.Validate). Anything else raises MALFORMED.
CREATE FUNCTION fencegate.parse_envelope(envelope TEXT) RETURNS fencegate.envelope_t LANGUAGE plpgsql AS $fg$
DECLARE
  j JSON;
  k TEXT;
  seen TEXT[] := '{}';
  e fencegate.envelope_t;
  why TEXT;
  fence TEXT; seq TEXT;
BEGIN
  IF envelope IS NULL OR octet_length(envelope) > 19456 THEN
    PERFORM fencegate.reject('MALFORMED', 'json: envelope missing or above 19456 bytes', NULL);
  END IF;
  BEGIN
    j := envelope::json;
    IF json_typeof(j) <> 'object' THEN
      why := 'want a JSON object';
    ELSE
      FOR k IN SELECT json_object_keys(j) LOOP
        IF k <> ALL (ARRAY['resource', 'lease', 'operationId', 'fenceToken', 'segmentSeq', 'payloadDigest',
            'grant', 'grantProof', 'status', 'statusProof']) THEN
          why := format('unknown field %I', k);
        ELSIF k = ANY (seen) THEN
          why := format('duplicate field %I', k);
        ELSIF k IN ('fenceToken', 'segmentSeq') AND json_typeof(j -> k) NOT IN ('number', 'null')
          OR k NOT IN ('fenceToken', 'segmentSeq') AND json_typeof(j -> k) NOT IN ('string', 'null') THEN
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
          coalesce(j ->> 'status', ''), coalesce(j ->> 'statusProof', ''));
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
    END;
  END IF;
  IF why IS NOT NULL THEN
    PERFORM fencegate.reject('MALFORMED', why, jsonb_build_object('resource', e.resource, 'fenceToken', e.fence, 'segmentSeq', e.seq));
  END IF;
  RETURN e;
END $fg$;

-- verified is an envelope that passed authentication (gate.Verified).
CREATE TYPE fencegate.verified AS (
  resource TEXT, operation_id TEXT, fence BIGINT, seq BIGINT, payload_digest TEXT,
  grant_digest TEXT, root TEXT, policy_generation NUMERIC, grant_issued_ms BIGINT,
  has_status BOOLEAN, status_state TEXT, status_issued_ms BIGINT, status_valid_ms BIGINT
);

-- authenticate is gate.Policy.Authenticate for an envelope sent by the
-- workload identity caller: strict parse, proofs, binding, identity. It
-- raises BAD_PROOF, EPOCH_REVOKED, BINDING_MISMATCH or IDENTITY_MISMATCH.
CREATE FUNCTION fencegate.authenticate(e fencegate.envelope_t, caller TEXT) RETURNS fencegate.verified
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
  RETURN ROW(e.resource, e.operation_id, e.fence, e.seq, e.payload_digest, fencegate.digest_text(gd), root,
    g.policy_generation, g.issued_at_ms, e.status_text <> '', s.state, s.issued_at_ms, s.valid_until_ms)::fencegate.verified;
END $fg$;

-- decision is gate.Decision: the outcome, what to write, and the state
-- after (st).
CREATE TYPE fencegate.decision AS (
  outcome TEXT, reason TEXT, also TEXT, alarm TEXT,
  quarantine BOOLEAN, store BOOLEAN, proceed BOOLEAN, shadow_log BOOLEAN, recorded BOOLEAN,
  st fencegate.resources
);

CREATE FUNCTION fencegate.rejected(st fencegate.resources, outcome TEXT, reason TEXT) RETURNS fencegate.decision
LANGUAGE sql IMMUTABLE AS $fg$
  SELECT ROW(outcome, reason, '', '', FALSE, FALSE, FALSE, FALSE, FALSE, st)::fencegate.decision
$fg$;

-- order_of is regression.go's orderOf: how t relates to ref under skew.
CREATE FUNCTION fencegate.order_of(t BIGINT, ref BIGINT, skew BIGINT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN ref IS NULL THEN 'ambiguous' WHEN t > ref + skew THEN 'after' WHEN t <= ref - skew THEN 'before'
    ELSE 'ambiguous' END
$fg$;

-- judge is StatusEvidence.judge for the envelope's own status proof (this
-- gate has no status querier): NULL when it proves HELD at now, else
-- 'OUTCOME|why'.
CREATE FUNCTION fencegate.judge(v fencegate.verified, now_ms BIGINT, skew BIGINT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE
    WHEN NOT v.has_status THEN 'NOT_HELD|no status proof and no status querier configured'
    WHEN v.status_state <> 'HELD' THEN 'NOT_HELD|grant is ' || v.status_state || ' (status proof)'
    WHEN NOT (now_ms + skew < v.status_valid_ms) THEN format('PROOF_EXPIRED|status proof valid until %s, gate clock %s + skew bound %s ms',
      fencegate.stamp(v.status_valid_ms), fencegate.stamp(now_ms), skew)
  END
$fg$;

CREATE FUNCTION fencegate.regression(v fencegate.verified, st fencegate.resources, also TEXT, why TEXT) RETURNS fencegate.decision
LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  d fencegate.decision := fencegate.rejected(st, 'FENCE_REGRESSION', why || ': the registry went backwards; resource paused, highestFence kept');
BEGIN
  d.also := also; d.alarm := 'FENCE_REGRESSION'; d.store := TRUE;
  d.st.paused := TRUE;
  d.st.paused_reason := format('FENCE_REGRESSION: fence %s from grant %s vs highest %s', v.fence, v.grant_digest, st.highest_fence);
  RETURN d;
END $fg$;

CREATE FUNCTION fencegate.suspected(st fencegate.resources, why TEXT) RETURNS fencegate.decision
LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  d fencegate.decision := fencegate.rejected(st, 'STALE_OWNER', why || '; a regression is possible, not proven: alarm recorded, resource not paused');
BEGIN
  d.alarm := 'REGRESSION_SUSPECTED';
  RETURN d;
END $fg$;

-- decide_fence is gate.decideFence with belowFloor, twoGrantsOneFence,
-- lowerFence and higherFenceIssuedBefore (gate/regression.go). Without a
-- querier, a close call is a suspected regression (confirmLower with no
-- confirmation).
CREATE FUNCTION fencegate.decide_fence(v fencegate.verified, st fencegate.resources, prior fencegate.receipts, now_ms BIGINT, skew BIGINT)
RETURNS fencegate.decision LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  why TEXT;
  judged TEXT;
  d fencegate.decision;
BEGIN
  IF st.fence_floor > 0 AND v.fence <= st.fence_floor THEN
    CASE fencegate.order_of(v.grant_issued_ms, st.floor_at_ms, skew)
      WHEN 'after' THEN RETURN fencegate.regression(v, st, 'STALE_OWNER', format('grant with fence %s ≤ floor %s was issued at %s, after the resume at %s',
        v.fence, st.fence_floor, fencegate.stamp(v.grant_issued_ms), fencegate.stamp(st.floor_at_ms)));
      WHEN 'before' THEN RETURN fencegate.rejected(st, 'STALE_OWNER', format('fence %s ≤ floor %s stated at the resume of %s: a grant from before the repair',
        v.fence, st.fence_floor, fencegate.stamp(st.floor_at_ms)));
      ELSE RETURN fencegate.suspected(st, format('fence %s ≤ floor %s: grant issued at %s, within %s ms of the resume at %s',
        v.fence, st.fence_floor, fencegate.stamp(v.grant_issued_ms), skew, fencegate.stamp(st.floor_at_ms)));
    END CASE;
  END IF;
  why := CASE
    WHEN v.fence = st.highest_fence AND st.grant_digest <> '' AND st.grant_digest <> v.grant_digest THEN
      format('fence %s == highest, accepted under grant %s, not %s', v.fence, st.grant_digest, v.grant_digest)
    WHEN v.fence = st.highest_fence AND st.highest_fence > 0 AND v.root <> st.root THEN
      format('fence %s == highest under root %s, not %s', v.fence, st.root, v.root)
    WHEN prior.resource IS NOT NULL AND prior.grant_digest <> v.grant_digest THEN
      format('fence %s segment %s was accepted under grant %s, not %s', v.fence, v.seq, prior.grant_digest, v.grant_digest)
  END;
  IF why IS NOT NULL THEN
    RETURN fencegate.regression(v, st, CASE WHEN v.fence < st.highest_fence THEN 'STALE_OWNER' ELSE 'ROOT_MISMATCH' END, why);
  END IF;
  judged := fencegate.judge(v, now_ms, skew);
  IF v.fence < st.highest_fence THEN
    IF judged IS NOT NULL THEN
      RETURN fencegate.rejected(st, 'STALE_OWNER', format('fence %s < highest %s (and %s)', v.fence, st.highest_fence, split_part(judged, '|', 2)));
    END IF;
    CASE fencegate.order_of(v.status_issued_ms, st.grant_issued_at_ms, skew)
      WHEN 'after' THEN RETURN fencegate.regression(v, st, 'STALE_OWNER', format('fence %s < highest %s, but its HELD proof was issued at %s, after the grant at highest (issued %s)',
        v.fence, st.highest_fence, fencegate.stamp(v.status_issued_ms), fencegate.stamp(st.grant_issued_at_ms)));
      WHEN 'before' THEN RETURN fencegate.rejected(st, 'STALE_OWNER', format('fence %s < highest %s (its HELD proof was issued at %s, before the grant at highest, issued %s)',
        v.fence, st.highest_fence, fencegate.stamp(v.status_issued_ms), fencegate.stamp(st.grant_issued_at_ms)));
      ELSE RETURN fencegate.suspected(st, format('fence %s < highest %s: its HELD proof (issued %s) is within %s ms of the grant at highest (issued %s)',
        v.fence, st.highest_fence, fencegate.stamp(v.status_issued_ms), skew, fencegate.stamp(st.grant_issued_at_ms)));
    END CASE;
  END IF;
  -- higherFenceIssuedBefore: a higher fence whose grant the registry
  -- issued more than the skew bound before the grant at highestFence
  -- (strictly: two replicas' clocks may be exactly the bound apart).
  IF v.fence > st.highest_fence AND st.grant_issued_at_ms IS NOT NULL AND v.grant_issued_ms + skew < st.grant_issued_at_ms THEN
    RETURN fencegate.regression(v, st, '', format('fence %s > highest %s, but its grant was issued at %s, before the grant at highest (issued %s)',
      v.fence, st.highest_fence, fencegate.stamp(v.grant_issued_ms), fencegate.stamp(st.grant_issued_at_ms)));
  END IF;
  IF judged IS NOT NULL THEN
    RETURN fencegate.rejected(st, split_part(judged, '|', 1), split_part(judged, '|', 2));
  END IF;
  IF v.fence > st.highest_fence AND v.seq <> 1 THEN
    RETURN fencegate.rejected(st, 'SEGMENT_GAP', format('fence %s > highest %s must start at segment 1, got %s', v.fence, st.highest_fence, v.seq));
  ELSIF v.fence = st.highest_fence AND v.seq <> st.last_seq + 1 THEN
    RETURN fencegate.rejected(st, 'SEGMENT_GAP', format('fence %s: segment %s is not the next after %s', v.fence, v.seq, st.last_seq));
  END IF;
  d := fencegate.rejected(st, 'ACCEPTED', '');
  d.proceed := TRUE; d.store := TRUE;
  d.st.highest_fence := v.fence; d.st.root := v.root; d.st.last_seq := v.seq;
  d.st.grant_digest := v.grant_digest; d.st.grant_issued_at_ms := v.grant_issued_ms;
  RETURN d;
END $fg$;

-- decide is gate.Decide (steps 5-6, in its precedence) followed by its
-- applyMode.
CREATE FUNCTION fencegate.decide(v fencegate.verified, st fencegate.resources, prior fencegate.receipts, now_ms BIGINT, skew BIGINT)
RETURNS fencegate.decision LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  same BOOLEAN := prior.resource IS NOT NULL AND prior.grant_digest = v.grant_digest;
  d fencegate.decision;
BEGIN
  IF same AND prior.payload_digest = v.payload_digest AND prior.operation_root = v.root THEN
    RETURN fencegate.rejected(st, 'REPLAYED', format('segment %s under fence %s already accepted with this payload; original receipt %s',
      v.seq, v.fence, fencegate.receipt_id(prior, 'ACCEPTED')));
  ELSIF st.paused THEN
    d := fencegate.rejected(st, 'RESOURCE_PAUSED', format('resource %s is paused (%s); an operator must resume it', st.resource, st.paused_reason));
  ELSIF same THEN
    d := fencegate.rejected(st, 'QUARANTINED', format('segment %s under fence %s was accepted with payload %s (receipt %s); this one has %s',
      v.seq, v.fence, prior.payload_digest, fencegate.receipt_id(prior, 'ACCEPTED'), v.payload_digest));
    d.quarantine := TRUE;
  ELSIF v.policy_generation < st.min_policy_generation THEN
    d := fencegate.rejected(st, 'POLICY_STALE', format('grant policy generation %s below the resource''s minimum %s',
      v.policy_generation, st.min_policy_generation));
  ELSE
    d := fencegate.decide_fence(v, st, prior, now_ms, skew);
  END IF;
  d.recorded := d.quarantine OR d.alarm <> '';
  IF st.mode = 'shadow' AND d.outcome <> 'ACCEPTED' THEN
    d.proceed := TRUE; d.shadow_log := TRUE; d.recorded := TRUE;
    IF d.outcome = 'FENCE_REGRESSION' THEN
      d.store := FALSE; d.st.paused := FALSE; d.st.paused_reason := '';
    END IF;
  END IF;
  RETURN d;
END $fg$;
