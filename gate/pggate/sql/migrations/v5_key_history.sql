-- Schema version 5: a key ID is used once, forever. key_history keeps
-- every key ID fencegate.keys has held, with its secret's digest (never
-- the secret) and the furthest state it reached; the triggers that keep
-- it are in key_history.sql. The application's roles cannot read it.
CREATE TABLE fencegate.key_history (
  key_id TEXT PRIMARY KEY CHECK (key_id ~ '^[A-Za-z0-9._-]{1,64}$'),
  secret_digest TEXT NOT NULL CHECK (secret_digest ~ '^sha256:[0-9a-f]{64}$'),
  state TEXT NOT NULL CHECK (state IN ('active', 'verify-only', 'retired', 'dropped'))
);
REVOKE ALL ON fencegate.key_history FROM PUBLIC;

-- The keys enrolled before this version, each in its state. The digest
-- is fencegate.key_secret_digest's (grant.SigningKey.SecretDigest),
-- written out: the functions are created after the migrations.
INSERT INTO fencegate.key_history (key_id, secret_digest, state)
  SELECT key_id, 'sha256:' || encode(pg_catalog.sha256(convert_to('fencegate.keySecretDigest.v1', 'UTF8') || '\x00'::bytea || secret), 'hex'), state
  FROM fencegate.keys;
