-- Schema version 6: the coverage guard per resource. Each receipt keeps
-- the ID of the transaction that stored it, and a protected table's
-- guard admits a row only when the receipt at the fence state of the
-- row's own resource was stored by the writing transaction (guard.sql).
-- The tx_accepts mark goes.
ALTER TABLE fencegate.receipts ADD COLUMN xid XID8;
ALTER TABLE fencegate.receipts ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
-- resource_expr: the column or expression naming a protected row's
-- resource ('' when unknown: no row is admitted, or each is counted
-- ungated, until the table is protected again naming it).
ALTER TABLE fencegate.protected ADD COLUMN resource_expr TEXT NOT NULL DEFAULT 'resource';
-- A table protected before without a column resource names no resource.
-- (A table dropped since is left alone.)
UPDATE fencegate.protected p SET resource_expr = ''
  WHERE to_regclass(p.table_name::text) IS NOT NULL
    AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = p.table_name AND a.attname = 'resource' AND a.attnum > 0 AND NOT a.attisdropped);
DROP TABLE fencegate.tx_accepts;
