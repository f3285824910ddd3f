-- The gate inside PostgreSQL, the decision: gate.Decide and the
-- regression rule (gate/decide.go, gate/regression.go) as pure functions
-- of the verified envelope, the resource's fence state, the prior
-- receipt at (resource, fence, segment), the gate clock and the skew
-- bound. They write nothing: apply.sql stores what a decision says.
-- FuzzDecideMatchesSQL holds them to gate.Decide.

-- decision is gate.Decision: the outcome, what to write, and the state
-- after (st).
CREATE TYPE fencegate.decision AS (
  outcome TEXT, reason TEXT, also TEXT, alarm TEXT,
  quarantine BOOLEAN, store BOOLEAN, proceed BOOLEAN, shadow_log BOOLEAN, recorded BOOLEAN,
  st fencegate.resources
);

-- rejected is a decision of outcome that writes nothing.
CREATE OR REPLACE FUNCTION fencegate.rejected(st fencegate.resources, outcome TEXT, reason TEXT) RETURNS fencegate.decision
LANGUAGE sql IMMUTABLE AS $fg$
  SELECT ROW(outcome, reason, '', '', FALSE, FALSE, FALSE, FALSE, FALSE, st)::fencegate.decision
$fg$;

-- order_of is regression.go's orderOf: how t relates to ref under skew.
CREATE OR REPLACE FUNCTION fencegate.order_of(t BIGINT, ref BIGINT, skew BIGINT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN ref IS NULL THEN 'ambiguous' WHEN t > ref + skew THEN 'after' WHEN t <= ref - skew THEN 'before'
    ELSE 'ambiguous' END
$fg$;

-- judge is StatusEvidence.judge for the envelope's own evidence (this
-- gate has no status querier): NULL when it proves HELD at now, else
-- 'OUTCOME|why'.
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

-- regression is a proven FENCE_REGRESSION: the resource is paused,
-- highestFence kept, an alarm recorded.
CREATE OR REPLACE FUNCTION fencegate.regression(v fencegate.verified, st fencegate.resources, also TEXT, why TEXT) RETURNS fencegate.decision
LANGUAGE plpgsql IMMUTABLE AS $fg$
DECLARE
  d fencegate.decision := fencegate.rejected(st, 'FENCE_REGRESSION', why || ': the registry went backwards; resource paused, highestFence kept');
BEGIN
  d.also := also; d.alarm := 'FENCE_REGRESSION'; d.store := TRUE;
  d.st.paused := TRUE;
  d.st.paused_reason := format('FENCE_REGRESSION: fence %s from grant %s vs highest %s', v.fence, v.grant_digest, st.highest_fence);
  RETURN d;
END $fg$;

-- suspected is a STALE_OWNER that may be a regression: an alarm, no
-- pause.
CREATE OR REPLACE FUNCTION fencegate.suspected(st fencegate.resources, why TEXT) RETURNS fencegate.decision
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
CREATE OR REPLACE FUNCTION fencegate.decide_fence(v fencegate.verified, st fencegate.resources, prior fencegate.receipts, now_ms BIGINT, skew BIGINT)
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
CREATE OR REPLACE FUNCTION fencegate.decide(v fencegate.verified, st fencegate.resources, prior fencegate.receipts, now_ms BIGINT, skew BIGINT)
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
