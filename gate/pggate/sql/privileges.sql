-- The gate inside PostgreSQL, privileges. The installing role owns
-- everything. Nothing is PUBLIC's; the role fencegate_writer may call
-- apply, record, receipt and state (apply.sql), which run as the owner
-- (SECURITY DEFINER) with a fixed search_path, so a writer can neither
-- read the keys nor write the gate's tables. Run after every other
-- source file, on every install: a function created since is PUBLIC's
-- to call until revoked, and a grant an earlier version made and this
-- one does not is taken back.
REVOKE ALL ON ALL TABLES IN SCHEMA fencegate FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA fencegate FROM PUBLIC;
REVOKE ALL ON SCHEMA fencegate FROM PUBLIC;
DO $fg$ BEGIN
  CREATE ROLE fencegate_writer NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $fg$;
GRANT USAGE ON SCHEMA fencegate TO fencegate_writer;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA fencegate FROM fencegate_writer;
GRANT EXECUTE ON FUNCTION fencegate.apply(TEXT, TEXT), fencegate.record(TEXT, TEXT),
  fencegate.receipt(TEXT, TEXT, BIGINT), fencegate.state(TEXT) TO fencegate_writer;
