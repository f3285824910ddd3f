// This file proves schema 9's upgrade of the coverage guard: a table
// protected under schema 8 (whose mark a session setting forged, the
// negative control shown before the upgrade) is guarded per resource
// after Migrate, with the very objects a fresh install and Protect
// create (the schema compared object by object); and a protected table
// without a resource column admits no row until it is protected again
// naming one.
package sqlgate_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// schema8Guard is the guard DDL a schema-8 gate installed on table.
func schema8Guard(b backend, table string) []string {
	if b.dialect == sqlgate.Postgres {
		return []string{
			`INSERT INTO fencegate_protected (table_name, mode) VALUES ('` + table + `', 'enforce')`,
			`CREATE TRIGGER fencegate_guard_` + table + ` BEFORE INSERT OR UPDATE OR DELETE ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION fencegate_guard('enforce')`,
		}
	}
	ddl := []string{`INSERT INTO fencegate_protected (table_name, mode) VALUES ('` + table + `', 'enforce')`}
	for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
		ddl = append(ddl, fmt.Sprintf(`CREATE TRIGGER fencegate_guard_%s_%s BEFORE %s ON %s BEGIN SELECT RAISE(ABORT, 'fencegate: %s on protected table %s outside an accepting gate Apply') WHERE NOT EXISTS (SELECT 1 FROM fencegate_apply_marker); UPDATE fencegate_apply_marker SET writes = writes + 1; END`,
			table, strings.ToLower(op), op, table, op, table))
	}
	return ddl
}

// guardedDB is a gate migrated to schema upTo on a fresh database with
// the tables keyed (rows name their resource) and, with unkeyed, a table
// without a resource column.
func guardedDB(t *testing.T, b backend, upTo int, unkeyed bool) (*sqlgate.Gate, *sql.DB, *gatetest.Issuer) {
	iss := gatetest.NewIssuer("main")
	g, err := sqlgate.New(sqlgate.Config{Dialect: b.dialect, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: fakeclock.New(iss.Now.Add(time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, db := context.Background(), b.open(t)
	if err := g.MigrateUpTo(ctx, db, upTo); err != nil {
		t.Fatal(err)
	}
	tables := []string{`CREATE TABLE keyed (resource TEXT NOT NULL, v TEXT NOT NULL)`}
	if unkeyed {
		tables = append(tables, `CREATE TABLE unkeyed (v TEXT NOT NULL)`)
	}
	for _, s := range tables {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return g, db, iss
}

func testGuardUpgrade(t *testing.T, b backend) {
	ctx := context.Background()
	g, db, iss := guardedDB(t, b, 8, true)
	for _, table := range []string{"keyed", "unkeyed"} {
		for _, s := range schema8Guard(b, table) {
			if _, err := db.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	if b.dialect == sqlgate.Postgres {
		// Negative control: schema 8's mark is a setting anyone can set.
		if _, err := db.ExecContext(ctx, `BEGIN; SELECT set_config('fencegate.apply', '1', true), set_config('fencegate.writes', '0', true);
INSERT INTO keyed VALUES ('up/r', 'forged'); COMMIT`); err != nil {
			t.Fatalf("negative control: schema 8 refused a forged setting: %v", err)
		}
	}
	if err := g.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if b.dialect == sqlgate.Postgres {
		if _, err := db.ExecContext(ctx, `BEGIN; SELECT set_config('fencegate.apply', '1', true), set_config('fencegate.writes', '0', true);
INSERT INTO keyed VALUES ('up/r', 'forged'); COMMIT`); !isRefusal(err) {
			t.Fatalf("after the upgrade a forged setting: %v", err)
		}
		db.ExecContext(ctx, `ROLLBACK`)
	}
	m := iss.Mutation(wr("up/r", 5, "op-a"), 1, "p")
	insert := func(table, value string) sqlgate.BusinessFunc {
		return func(ctx context.Context, tx *sql.Tx) error {
			q := `INSERT INTO keyed (resource, v) VALUES ('up/r', $1)`
			if table == "unkeyed" {
				q = `INSERT INTO unkeyed (v) VALUES ($1)`
			}
			_, err := tx.ExecContext(ctx, rebind(b, q), value)
			return err
		}
	}
	if _, err := g.Run(ctx, db, owner, m, insert("unkeyed", "x")); !isRefusal(err) {
		t.Fatalf("a table without a resource column after the upgrade: %v", err)
	}
	if _, err := g.Run(ctx, db, owner, m, insert("keyed", "x")); err != nil {
		t.Fatalf("the accepted resource's row after the upgrade: %v", err)
	}
	c, err := g.Coverage(ctx, db)
	if err != nil || len(c.Tables) != 2 || c.Tables[0].Resource != "resource" || c.Tables[1].Resource != "" || c.Gated != 1 {
		t.Fatalf("coverage after the upgrade: %+v, %v", c, err)
	}
	if err := g.ProtectResource(ctx, db, "unkeyed", "'up/' || v", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, db, owner, iss.Mutation(wr("up/r", 5, "op-a"), 2, "p"), insert("unkeyed", "r")); err != nil {
		t.Fatalf("unkeyed protected again naming its resource: %v", err)
	}
	// Upgraded and fresh: the same schema, object by object.
	g8, db8, _ := guardedDB(t, b, 8, false)
	for _, s := range schema8Guard(b, "keyed") {
		if _, err := db8.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := g8.Migrate(ctx, db8); err != nil {
		t.Fatal(err)
	}
	g9, db9, _ := guardedDB(t, b, sqlgate.SchemaVersion(), false)
	if err := g9.Protect(ctx, db9, "keyed", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	upgraded, fresh := schemaOf(t, b, db8), schemaOf(t, b, db9)
	if !slices.Equal(upgraded, fresh) {
		t.Fatalf("upgraded and fresh schemas differ:\nupgraded only: %q\nfresh only: %q", minus(upgraded, fresh), minus(fresh, upgraded))
	}
}

// schemaOf lists the database's objects, one definition each, sorted.
func schemaOf(t *testing.T, b backend, db *sql.DB) []string {
	q := `SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'`
	if b.dialect == sqlgate.Postgres {
		q = `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
  FROM information_schema.columns WHERE table_schema = current_schema()
UNION ALL SELECT 'trigger ' || tgname || ': ' || pg_get_triggerdef(t.oid) FROM pg_trigger t WHERE NOT tgisinternal
UNION ALL SELECT 'function ' || p.proname || ': ' || pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
UNION ALL SELECT 'index ' || indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
