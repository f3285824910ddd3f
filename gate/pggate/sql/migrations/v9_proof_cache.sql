-- Schema version 9: the proof cache (issue 45 item 3). A grant's proof
-- serves every segment of its operation and a status's every write until
-- it is refreshed, and checking one in PL/pgSQL (the proof's form, its
-- base64url, the HMAC) was paid again on each; the Go gate keeps its
-- verified proofs (grant.Verifier's cache) for the same reason. proofs
-- keeps each proof that verified, by the SHA-256 of everything the check
-- covered (the schema, the message's digest, the proof's text), with the
-- key it verified under and the SHA-256 of that key's secret: a hit
-- needs the same key with the same secret now, and the key's state, its
-- epochs and the revocation are checked again on every write. Only a
-- proof that verified is stored, by verify itself. UNLOGGED: a crash
-- empties it, and a miss only verifies again. Every install empties it
-- too (authenticate.sql). The application's roles cannot read or write
-- it.
CREATE UNLOGGED TABLE fencegate.proofs (
  id BYTEA PRIMARY KEY,          -- SHA-256 over schema, 0x00, the message's digest, 0x00, the proof
  key_id TEXT NOT NULL,          -- the key it verified under
  key_digest BYTEA NOT NULL,     -- SHA-256 of that key's secret then
  epoch NUMERIC NOT NULL,        -- the message's issuer epoch (its digest fixes it), for the policy on a hit
  until_ms BIGINT NOT NULL       -- the grant's expiresAt or the status's validUntil: after it the entry may go
);
CREATE INDEX proofs_by_until ON fencegate.proofs (until_ms);
REVOKE ALL ON fencegate.proofs FROM PUBLIC;
