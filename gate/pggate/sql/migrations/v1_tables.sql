-- Schema version 1: the gate's tables. Migrations hold tables, columns,
-- indexes and data moves, never a function: the functions, types and
-- triggers are the source beside this directory (sql/*.sql), which
-- every install and upgrade creates again after the migrations it
-- applies. A migration is applied once, in order, and never edited
-- once released.

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
-- tx_accepts marked the transactions in which fencegate.apply let a
-- business change proceed, for the coverage guard of versions 1 to 5
-- (version 6 drops it: the receipt is the mark now).
CREATE TABLE fencegate.tx_accepts (
  xid XID8 PRIMARY KEY DEFAULT pg_current_xact_id(),
  resource TEXT NOT NULL,
  writes BIGINT NOT NULL DEFAULT 0
);
