-- The gate inside PostgreSQL, key history: a key ID is used once,
-- forever. fencegate.key_history (migrations/v5_key_history.sql)
-- remembers every key ID this gate has enrolled, with its secret's
-- digest (never the secret) and the furthest state it reached (active →
-- verify-only → retired → dropped, when its row leaves fencegate.keys).
-- The triggers on fencegate.keys refuse (FG021, with the registry's key
-- history codes) any row that brings an ID back with another secret,
-- after it was dropped, or in a state before one it reached: through
-- set_key (gate enroll --key) or any statement of the owner's on the
-- table.

-- key_secret_digest is grant.SigningKey.SecretDigest: SHA-256 over the
-- domain string, a zero byte and the secret.
CREATE OR REPLACE FUNCTION fencegate.key_secret_digest(secret BYTEA) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN 'sha256:' || encode(pg_catalog.sha256(convert_to('fencegate.keySecretDigest.v1', 'UTF8') || '\x00'::bytea || secret), 'hex');
END $fg$;

-- key_rank orders the states; a key's state never moves to a lower one.
CREATE OR REPLACE FUNCTION fencegate.key_rank(state TEXT) RETURNS INT LANGUAGE plpgsql IMMUTABLE AS $fg$
BEGIN
  RETURN CASE state WHEN 'active' THEN 0 WHEN 'verify-only' THEN 1 WHEN 'retired' THEN 2 WHEN 'dropped' THEN 3 END;
END $fg$;

-- key_admit records key row k in the history, or refuses it (FG021):
-- KEY_OTHER_SECRET, KEY_DROPPED or KEY_STATE_BACK, as the registry's
-- key history does.
CREATE OR REPLACE FUNCTION fencegate.key_admit(k fencegate.keys) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  d TEXT := fencegate.key_secret_digest(k.secret);
  h fencegate.key_history;
BEGIN
  INSERT INTO fencegate.key_history (key_id, secret_digest, state) VALUES (k.key_id, d, k.state) ON CONFLICT (key_id) DO NOTHING;
  SELECT * INTO h FROM fencegate.key_history WHERE key_history.key_id = k.key_id FOR UPDATE;
  IF h.secret_digest <> d THEN
    PERFORM fencegate.refused(format('key %s: KEY_OTHER_SECRET: the ID was enrolled with another secret (%s, now %s); a key ID is used once, forever: give the new key a new ID (fencegate keys gen --id NEW)', k.key_id, h.secret_digest, d));
  ELSIF h.state = 'dropped' THEN
    PERFORM fencegate.refused(format('key %s: KEY_DROPPED: the ID was removed from this gate''s keys earlier and never comes back; a key ID is used once, forever: give the new key a new ID', k.key_id));
  ELSIF fencegate.key_rank(k.state) < fencegate.key_rank(h.state) THEN
    PERFORM fencegate.refused(format('key %s: KEY_STATE_BACK: state %s → %s moves back (active → verify-only → retired only)', k.key_id, h.state, k.state));
  END IF;
  UPDATE fencegate.key_history SET state = k.state WHERE key_history.key_id = k.key_id AND key_history.state <> k.state;
END $fg$;

-- keys_history is the trigger on fencegate.keys: a row written is
-- admitted (key_admit); a row removed, or renamed away, is dropped.
CREATE OR REPLACE FUNCTION fencegate.keys_history() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $fg$
BEGIN
  IF TG_OP IN ('DELETE', 'UPDATE') AND (TG_OP = 'DELETE' OR OLD.key_id <> NEW.key_id) THEN
    UPDATE fencegate.key_history SET state = 'dropped' WHERE key_history.key_id = OLD.key_id;
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  PERFORM fencegate.key_admit(NEW);
  RETURN NEW;
END $fg$;

-- keys_truncated drops every key a TRUNCATE removes.
CREATE OR REPLACE FUNCTION fencegate.keys_truncated() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $fg$
BEGIN
  UPDATE fencegate.key_history SET state = 'dropped' WHERE key_id IN (SELECT key_id FROM fencegate.keys);
  RETURN NULL;
END $fg$;

CREATE TRIGGER keys_history BEFORE INSERT OR UPDATE OR DELETE ON fencegate.keys
  FOR EACH ROW EXECUTE FUNCTION fencegate.keys_history();
CREATE TRIGGER keys_truncated BEFORE TRUNCATE ON fencegate.keys
  FOR EACH STATEMENT EXECUTE FUNCTION fencegate.keys_truncated();
