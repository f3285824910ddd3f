-- The gate inside PostgreSQL, the coverage guard of protected tables: a
-- row of a protected table is written only under an accept of the row's
-- own resource in the same transaction (enforce: FG020 otherwise), or
-- is counted ungated (shadow). The mark is the accept's receipt, which
-- keeps the ID of the transaction that stored it (receipts.xid): only
-- apply stores receipts and the writer's roles cannot write the table,
-- so a writer cannot create the mark; it names its resource; it lives
-- exactly as long as the accepting transaction.

-- guard_row_resource is the SQL, in a trigger on the table, of the
-- resource of trigger row rec (NEW or OLD) as text: a lower-case column
-- name as itself, any other expression evaluated over the row's columns
-- (with search_path pg_catalog), '' as NULL (unknown).
CREATE OR REPLACE FUNCTION fencegate.guard_row_resource(resource TEXT, rec TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fg$
  SELECT CASE WHEN coalesce(resource, '') = '' THEN 'NULL::text'
    WHEN resource ~ '^[a-z_][a-z0-9_]*$' THEN format('(%s.%s)::text', rec, resource)
    ELSE format('(SELECT (%s)::text FROM (SELECT %s.*) AS t)', resource, rec) END
$fg$;

-- install_guard (re)installs the guard of protected table tbl: a trigger
-- function of its own, SECURITY DEFINER with a fixed search_path, that
-- admits a row when its resource's last receipt was stored by this
-- transaction (an UPDATE that moves a row to another resource needs both)
-- and counts it on the resource's gated_writes; else refuses it (enforce,
-- FG020) or counts it on the table's ungated (shadow). The table's
-- trigger is created only when it does not call that function already:
-- replacing the function takes no lock on the table.
CREATE OR REPLACE FUNCTION fencegate.install_guard(tbl REGCLASS, mode TEXT, resource TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  fn TEXT := format('fencegate.guard_%s', tbl::oid);
  -- The receipt at the fence row's state, by a subquery correlated with
  -- the row (a point lookup on the receipts' key), not an EXISTS, whose
  -- generic plan is a join reading every receipt of the resource.
  accepted TEXT := '(SELECT c.xid FROM fencegate.receipts c WHERE c.resource = r.resource AND c.fence = r.highest_fence'
    || ' AND c.seq = r.last_seq' || CASE WHEN mode = 'enforce' THEN ' AND c.mode = ''enforce''' ELSE '' END || ') = pg_current_xact_id()';
  otherwise TEXT := 'UPDATE fencegate.protected SET ungated = ungated + 1 WHERE table_name = TG_RELID::regclass;';
BEGIN
  IF mode = 'enforce' THEN
    otherwise := $o$RAISE EXCEPTION USING ERRCODE = 'FG020',
      MESSAGE = format('fencegate: FG020: %s on protected table %s outside an accepting fencegate.apply of the resource of the row (%s) in this transaction, in enforce mode',
        TG_OP, TG_RELID::regclass, coalesce(quote_literal(res), 'NULL')),
      HINT = 'call fencegate.apply for the resource of the row earlier in the same transaction';$o$;
  END IF;
  EXECUTE format($t$CREATE OR REPLACE FUNCTION %1$s() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $g$
DECLARE
  res TEXT;
  was TEXT;
  ok BOOLEAN := TRUE;
BEGIN
  IF TG_OP = 'DELETE' THEN res := %2$s; ELSE res := %3$s; END IF;
  IF TG_OP = 'UPDATE' THEN
    was := %2$s;
    IF was IS DISTINCT FROM res THEN
      PERFORM FROM fencegate.resources r WHERE r.resource = was AND %4$s;
      ok := FOUND;
      IF NOT ok THEN res := was; END IF;
    END IF;
  END IF;
  IF ok THEN
    UPDATE fencegate.resources r SET gated_writes = r.gated_writes + 1 WHERE r.resource = res AND %4$s;
    ok := FOUND;
  END IF;
  IF NOT ok THEN
    %5$s
  END IF;
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $g$$t$, fn, fencegate.guard_row_resource(resource, 'OLD'), fencegate.guard_row_resource(resource, 'NEW'), accepted, otherwise);
  EXECUTE format('REVOKE ALL ON FUNCTION %s() FROM PUBLIC', fn);
  IF NOT EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = tbl AND t.tgname = 'fencegate_guard' AND t.tgfoid = fn::regproc) THEN
    EXECUTE format('DROP TRIGGER IF EXISTS fencegate_guard ON %s', tbl);
    EXECUTE format('CREATE TRIGGER fencegate_guard BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION %s()', tbl, fn);
  END IF;
END $fg$;

-- protect registers a table and installs its guard, rows naming their
-- resource by resource (a column, or an SQL expression over the row's
-- columns, at most 256 bytes, without ';', '$' or comments, evaluated
-- with search_path pg_catalog); shadow → enforce only.
CREATE OR REPLACE FUNCTION fencegate.protect(tbl REGCLASS, mode TEXT, operator TEXT, resource TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
DECLARE
  cur TEXT;
BEGIN
  IF coalesce(operator, '') = '' THEN PERFORM fencegate.refused('operator actions need the operator''s name'); END IF;
  IF mode NOT IN ('shadow', 'enforce') THEN PERFORM fencegate.refused(format('gate: mode downgrade refused: mode %L', mode)); END IF;
  IF resource IS NULL OR octet_length(resource) NOT BETWEEN 1 AND 256 OR resource ~ '[;$]|--|/\*|\*/' THEN
    PERFORM fencegate.refused(format('protect %s: resource %L: want a column name or an SQL expression over the row''s columns of 1..256 bytes without '';'', ''$'' or comments', tbl, resource));
  END IF;
  BEGIN
    EXECUTE format('SELECT (%s)::text FROM %s AS t LIMIT 0', resource, tbl);
  EXCEPTION WHEN OTHERS THEN
    PERFORM fencegate.refused(format('protect %s: resource %L does not evaluate on its rows: %s', tbl, resource, SQLERRM));
  END;
  SELECT p.mode INTO cur FROM fencegate.protected p WHERE p.table_name = tbl FOR UPDATE;
  IF cur = 'enforce' AND mode <> 'enforce' THEN
    PERFORM fencegate.refused(format('gate: mode downgrade refused: enforce is final: protect %s %s → %s', tbl, cur, mode));
  END IF;
  INSERT INTO fencegate.protected (table_name, mode, resource_expr) VALUES (tbl, mode, resource)
    ON CONFLICT (table_name) DO UPDATE SET mode = excluded.mode, resource_expr = excluded.resource_expr;
  PERFORM fencegate.install_guard(tbl, mode, resource);
  PERFORM fencegate.act(tbl::text, 'protect', operator, format('protect %s mode %s → %s, resource %s', tbl, coalesce(cur, 'shadow'), mode, resource));
END $fg$;

-- protect with three arguments is schema version 1's call: the rows name
-- their resource in the column resource.
CREATE OR REPLACE FUNCTION fencegate.protect(tbl REGCLASS, mode TEXT, operator TEXT) RETURNS VOID LANGUAGE plpgsql AS $fg$
BEGIN
  PERFORM fencegate.protect(tbl, mode, operator, 'resource');
END $fg$;

-- Every install regenerates each protected table's guard from
-- install_guard above, so that the guards are today's too (a table
-- dropped since is left alone).
SELECT fencegate.install_guard(p.table_name, p.mode, p.resource_expr)
  FROM fencegate.protected p WHERE to_regclass(p.table_name::text) IS NOT NULL ORDER BY p.table_name::text;
