-- fencegate PostgreSQL-native gate, schema version 2, part 1: a
-- lockGrant.v1 may end with a heldUntil line, the grant's own HELD
-- statement (grant.Grant.HeldUntil), as grant.ParseGrant accepts it: the
-- earlier form parses as before (held_until_ms NULL), the held form has
-- issuedAt <= heldUntil <= expiresAt. A rejected grant is a NULL row;
-- an accepted earlier-form one has held_until_ms NULL, so test acceptance
-- with (parse_grant(b)).resource IS NOT NULL, not parse_grant(b) IS NOT
-- NULL (true of a composite only when every attribute is).

ALTER TYPE fencegate.grant_t ADD ATTRIBUTE held_until_ms BIGINT;

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
