package sqlgate

import (
	"fmt"
	"strings"
)

// guardSpec is one protected table's guard, as Dialect.guard installs it.
type guardSpec struct {
	prefix string
	// schema is the schema of the gate's tables, quoted (PostgreSQL; ""
	// on SQLite, whose triggers name their own database's tables).
	schema string
	table  string
	// resource is the column or expression naming a row's resource; ""
	// when unknown: no row is admitted (enforce) or every row is counted
	// ungated (shadow).
	resource string
	// cols are the table's columns, over which an expression is
	// evaluated.
	cols []string
	mode string
}

// refusalFormat is the message of a refused write (its code first), a
// format of the statement kind, the table and the resource.
const refusalFormat = "fencegate: FG020: %s on protected table %s outside an accepting gate Apply of the resource of the row (%s) in this transaction, in enforce mode"

// postgresRowResource is the resource of trigger row row (NEW or OLD) as
// text.
func postgresRowResource(s guardSpec, row string) string {
	switch {
	case s.resource == "":
		return "NULL::pg_catalog.text"
	case identRE.MatchString(s.resource):
		return "(" + row + "." + s.resource + ")::pg_catalog.text"
	}
	// An expression over the row's columns: evaluated on the row alone.
	return "(SELECT (" + s.resource + ")::pg_catalog.text FROM (SELECT " + row + ".*) AS t)"
}

// pgEq is PostgreSQL's equality operator named so that no search_path
// can put another in its place.
const pgEq = " OPERATOR(pg_catalog.=) "

// postgresGuard is PostgreSQL's guard of one table: a trigger function
// of its own, SECURITY DEFINER as the gate's owner, that admits a row
// when its resource's last receipt was stored by this transaction — the
// accept is the mark — and counts it as gated; or refuses it (enforce,
// SQLSTATE FG020), or counts it as ungated (shadow). An UPDATE that moves
// a row to another resource needs both accepted.
//
// Nothing a writer's session sets changes what it reads or how it
// compares: every table, type, function and operator it names is
// qualified (a writer's search_path, temporary tables and operators of
// its own are never looked at). A resource given as an expression, which
// may name anything, runs with search_path pg_catalog instead (the SET
// clause costs about 20 µs a call, which a column does not pay).
func postgresGuard(s guardSpec) []string {
	name := s.prefix + "guard_" + s.table
	// The receipt at the fence row's state, read by a subquery correlated
	// with the row (a point lookup on the receipts' key for each row),
	// not an EXISTS: PostgreSQL turns that into a join whose generic plan
	// reads every receipt of the resource.
	mode := ""
	if s.mode == "enforce" {
		mode = ` AND c.mode` + pgEq + `'enforce'`
	}
	accepted := `(SELECT c.xid FROM ` + s.schema + `.` + s.prefix + `receipts c WHERE c.resource` + pgEq + `r.resource AND c.fence` + pgEq + `r.highest_fence
      AND c.seq` + pgEq + `r.last_seq` + mode + `)` + pgEq + `pg_catalog.pg_current_xact_id()`
	otherwise := `UPDATE ` + s.schema + `.` + s.prefix + `protected SET ungated = ungated OPERATOR(pg_catalog.+) 1 WHERE table_name` + pgEq + `'` + s.table + `';`
	if s.mode == "enforce" {
		otherwise = `RAISE EXCEPTION USING ERRCODE = '` + UnguardedState + `',
      MESSAGE = pg_catalog.format('` + refusalFormat + `', TG_OP, TG_TABLE_NAME, coalesce(pg_catalog.quote_literal(res), 'NULL')),
      HINT = 'write a protected row inside the business function of a gate Apply accepted for the resource of the row';`
	}
	set := ""
	if s.resource != "" && !identRE.MatchString(s.resource) {
		set = " SET search_path = pg_catalog, pg_temp"
	}
	fn := `CREATE OR REPLACE FUNCTION ` + s.schema + `.` + name + `() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER` + set + ` AS $fg$
DECLARE
  res pg_catalog.text;
  was pg_catalog.text;
  ok pg_catalog.bool := TRUE;
BEGIN
  IF TG_OP` + pgEq + `'DELETE' THEN res := ` + postgresRowResource(s, "OLD") + `; ELSE res := ` + postgresRowResource(s, "NEW") + `; END IF;
  IF TG_OP` + pgEq + `'UPDATE' THEN
    was := ` + postgresRowResource(s, "OLD") + `;
    IF (was` + pgEq + `res) IS NOT TRUE THEN
      PERFORM FROM ` + s.schema + `.` + s.prefix + `resources r WHERE r.resource` + pgEq + `was AND ` + accepted + `;
      ok := FOUND;
      IF NOT ok THEN res := was; END IF;
    END IF;
  END IF;
  IF ok THEN
    UPDATE ` + s.schema + `.` + s.prefix + `resources r SET gated_writes = r.gated_writes OPERATOR(pg_catalog.+) 1 WHERE r.resource` + pgEq + `res AND ` + accepted + `;
    ok := FOUND;
  END IF;
  IF NOT ok THEN
    ` + otherwise + `
  END IF;
  IF TG_OP` + pgEq + `'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $fg$`
	return []string{
		"DROP TRIGGER IF EXISTS " + name + " ON " + s.table,
		fn,
		"REVOKE ALL ON FUNCTION " + s.schema + "." + name + "() FROM PUBLIC",
		"CREATE TRIGGER " + name + " BEFORE INSERT OR UPDATE OR DELETE ON " + s.table + " FOR EACH ROW EXECUTE FUNCTION " + s.schema + "." + name + "()",
	}
}

// sqliteRowResource is the resource of trigger row row (NEW or OLD).
func sqliteRowResource(s guardSpec, row string) string {
	switch {
	case s.resource == "":
		return "NULL"
	case identRE.MatchString(s.resource):
		return row + "." + s.resource
	}
	cols := make([]string, len(s.cols))
	for i, c := range s.cols {
		cols[i] = fmt.Sprintf(`%s."%s" AS "%s"`, row, c, c)
	}
	return "(SELECT (" + s.resource + ") FROM (SELECT " + strings.Join(cols, ", ") + "))"
}

// sqliteGuard is SQLite's guard of one table: a trigger per statement
// kind that admits a row when the gate marked its resource (a row of
// apply_marks, which exists only between an accept and its receipt in
// one write transaction, and which a commit refuses) and counts it on the
// mark; or refuses it (enforce) or counts it as ungated (shadow). An
// UPDATE needs the old row's resource marked too.
func sqliteGuard(s guardSpec) []string {
	var ddl []string
	for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
		name := fmt.Sprintf("%sguard_%s_%s", s.prefix, s.table, strings.ToLower(op))
		rows := map[string][]string{"INSERT": {"NEW"}, "UPDATE": {"OLD", "NEW"}, "DELETE": {"OLD"}}[op]
		var ok []string
		for _, row := range rows {
			cond := "resource = " + sqliteRowResource(s, row)
			if s.mode == "enforce" {
				cond += " AND enforce"
			}
			ok = append(ok, fmt.Sprintf("EXISTS (SELECT 1 FROM %sapply_marks WHERE %s)", s.prefix, cond))
		}
		admitted := strings.Join(ok, " AND ")
		last := sqliteRowResource(s, rows[len(rows)-1])
		check := fmt.Sprintf("SELECT RAISE(ABORT, '%s') WHERE NOT (%s);", fmt.Sprintf(refusalFormat, op, s.table, strings.ReplaceAll(s.resource, "'", "''")), admitted)
		if s.mode != "enforce" {
			check = fmt.Sprintf("UPDATE %sprotected SET ungated = ungated + 1 WHERE table_name = '%s' AND NOT (%s);", s.prefix, s.table, admitted)
		}
		ddl = append(ddl,
			"DROP TRIGGER IF EXISTS "+name,
			fmt.Sprintf("CREATE TRIGGER %s BEFORE %s ON %s BEGIN %s UPDATE %sapply_marks SET writes = writes + 1 WHERE resource = %s AND (%s); END",
				name, op, s.table, check, s.prefix, last, admitted))
	}
	return ddl
}
