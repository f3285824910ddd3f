// This file builds databases as each released schema version left them,
// from the frozen fixtures in testdata/released (the SQL of versions 1
// to 6 exactly as released, never installed by Install), and describes
// a database's gate as a sorted list of catalog entries, for the upgrade
// tests to compare. TestReleasedFixturesAreFrozen proves the fixtures
// are the released bytes (each file's SHA-256, as recorded when it was
// frozen) and that an edited one is caught.
package pggate_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

// releasedFile is one file of a released version's fixture.
type releasedFile struct {
	name string
	data []byte
}

// parseReleased splits a fixture (txtar: a comment, then "-- name --"
// lines each opening a file) and checks each file against the
// "sha256 name hex" lines of the comment.
func parseReleased(b []byte) ([]releasedFile, error) {
	var comment []byte
	var files []releasedFile
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if m := txtarMarker.FindSubmatch(line); m != nil {
			files = append(files, releasedFile{name: string(m[1])})
			continue
		}
		if len(files) == 0 {
			comment = append(comment, line...)
			continue
		}
		files[len(files)-1].data = append(files[len(files)-1].data, line...)
	}
	sums := releasedSum.FindAllSubmatch(comment, -1)
	if len(sums) != len(files) || len(files) == 0 {
		return nil, fmt.Errorf("%d files, %d sums", len(files), len(sums))
	}
	for i, f := range files {
		sum := sha256.Sum256(f.data)
		if string(sums[i][1]) != f.name || string(sums[i][2]) != hex.EncodeToString(sum[:]) {
			return nil, fmt.Errorf("file %s: sha256 %x, recorded %s %s: the released SQL was edited", f.name, sum, sums[i][1], sums[i][2])
		}
	}
	return files, nil
}

var (
	txtarMarker = regexp.MustCompile(`^-- (\S+) --\n$`)
	releasedSum = regexp.MustCompile(`(?m)^sha256 (\S+) ([0-9a-f]{64})$`)
)

// releasedScript is the SQL the released Install ran for version v,
// pgcrypto in the schema fencegate.
func releasedScript(t testing.TB, v int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("testdata/released/v%d.txtar", v))
	if err != nil {
		t.Fatal(err)
	}
	files, err := parseReleased(b)
	if err != nil {
		t.Fatalf("testdata/released/v%d.txtar: %v", v, err)
	}
	var s strings.Builder
	for _, f := range files {
		s.Write(f.data)
		s.WriteByte('\n')
	}
	return strings.ReplaceAll(s.String(), "{crypto}", `"fencegate"`)
}

// releasedVersions are the versions with a fixture: every one released
// before the gate's SQL became one source.
var releasedVersions = []int{1, 2, 3, 4, 5, 6}

func TestReleasedFixturesAreFrozen(t *testing.T) {
	for _, v := range releasedVersions {
		if s := releasedScript(t, v); !strings.Contains(s, fmt.Sprintf("schema version %d", v)) {
			t.Fatalf("version %d's fixture does not say its version", v)
		}
	}
	// Negative control: one byte changed in a function body is caught.
	b, err := os.ReadFile("testdata/released/v4.txtar")
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(b, []byte("'unknown'"), []byte("'UNKNOWN'"), 1)
	if bytes.Equal(edited, b) {
		t.Fatal("the negative control changed nothing")
	}
	if _, err := parseReleased(edited); err == nil || !strings.Contains(err.Error(), "was edited") {
		t.Fatalf("an edited fixture: %v", err)
	}
}

// newReleasedDB is a new database with the gate installed as the
// released Install of version v left it: its bookkeeping, pgcrypto in
// the schema fencegate, then versions 1 to v, each in a transaction of
// its own and recorded.
func newReleasedDB(t testing.TB, v int) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for _, s := range []string{
		`CREATE SCHEMA fencegate`,
		`CREATE TABLE fencegate.schema_version (version INT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
		`REVOKE ALL ON fencegate.schema_version FROM PUBLIC`,
		`CREATE EXTENSION pgcrypto SCHEMA fencegate`,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range releasedVersions[:v] {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, releasedScript(t, r)); err != nil {
			t.Fatalf("released version %d: %v", r, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO fencegate.schema_version (version) VALUES ($1)`, r); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// newGateDB is a new database, empty but for the options.
func newGateDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sameGate fails t unless got's gate is want's (a fresh install's).
func sameGate(t testing.TB, got []string, name string, want []string) {
	t.Helper()
	sameCatalog(t, got, name, want, "fresh")
}

func sameCatalog(t testing.TB, got []string, name string, want []string, wantName string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s and %s differ:\n%s", name, wantName, catalogDiff(got, want, name, wantName))
	}
}

// querier is a database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// catalogQueries describe the gate: every function of the schema
// fencegate (its definition, which carries its language, volatility,
// SECURITY DEFINER and search_path, then its owner and grants), every
// trigger of the database (the gate's and the guards of protected
// tables), the gate's types, relations, columns, constraints and
// indexes, the schema's grants, pgcrypto's schema, the versions
// recorded, and the rows that upgrades move (protected tables, key
// history, settings).
var catalogQueries = []string{
	`SELECT 'function ' || p.oid::regprocedure::text || ' owner ' || p.proowner::regrole::text || ' acl ' || coalesce(p.proacl::text, '-')
	   || E'\n' || CASE WHEN p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid) ELSE p.prokind::text END
	   FROM pg_proc p WHERE p.pronamespace = 'fencegate'::regnamespace`,
	`SELECT 'trigger ' || t.tgrelid::regclass::text || ' ' || pg_get_triggerdef(t.oid) FROM pg_trigger t WHERE NOT t.tgisinternal`,
	`SELECT 'type ' || t.typname || ' (' || (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
	     FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) || ') acl ' || coalesce(t.typacl::text, '-')
	   FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid AND c.relkind = 'c' WHERE t.typnamespace = 'fencegate'::regnamespace`,
	`SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' owner ' || c.relowner::regrole::text || ' acl ' || coalesce(c.relacl::text, '-')
	   FROM pg_class c WHERE c.relnamespace = 'fencegate'::regnamespace AND c.relkind <> 'c'`,
	`SELECT 'column ' || table_name || '.' || column_name || ' ' || ordinal_position || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '-')
	   FROM information_schema.columns WHERE table_schema = 'fencegate'`,
	`SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
	   FROM pg_constraint WHERE connamespace = 'fencegate'::regnamespace`,
	`SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'fencegate'`,
	`SELECT 'schema fencegate acl ' || coalesce(nspacl::text, '-') FROM pg_namespace WHERE nspname = 'fencegate'`,
	`SELECT 'extension ' || extname || ' in ' || extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pgcrypto'`,
	`SELECT 'versions ' || string_agg(version::text, ',' ORDER BY version) FROM fencegate.schema_version`,
	`SELECT 'protected ' || table_name::text || ' ' || mode || ' ' || resource_expr || ' ' || ungated FROM fencegate.protected`,
	`SELECT 'key history ' || key_id || ' ' || secret_digest || ' ' || state FROM fencegate.key_history`,
	`SELECT 'settings ' || to_jsonb(s)::text FROM fencegate.settings s`,
}

// guardName matches a guard function's name, which holds its table's
// OID: gateCatalog names the table instead, OIDs differ between
// databases.
var guardName = regexp.MustCompile(`guard_([0-9]+)`)

// gateCatalog describes the gate of q's database, one entry a catalog
// object, sorted.
func gateCatalog(t testing.TB, q querier) []string {
	t.Helper()
	tables := map[string]string{}
	for _, kv := range queryRows(t, q, `SELECT oid::text || ' ' || relname FROM pg_class WHERE relkind IN ('r', 'p')`) {
		oid, name, _ := strings.Cut(kv, " ")
		tables[oid] = name
	}
	var out []string
	for _, c := range catalogQueries {
		for _, s := range queryRows(t, q, c) {
			out = append(out, guardName.ReplaceAllStringFunc(s, func(m string) string {
				return "guard_of_" + tables[guardName.FindStringSubmatch(m)[1]]
			}))
		}
	}
	slices.Sort(out)
	return out
}

func queryRows(t testing.TB, q querier, query string) []string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s.Valid {
			out = append(out, s.String)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// catalogDiff explains how two catalogs differ: the entries only one
// side has, and an entry both sides name (by its first words) but spell
// differently by its first line that differs.
func catalogDiff(a, b []string, aName, bName string) string {
	key := func(s string) string {
		f := strings.Fields(s)
		n := map[string]int{"trigger": 5, "constraint": 3, "index": len(f)}[f[0]]
		return strings.Join(f[:min(max(n, 2), len(f))], " ")
	}
	var d strings.Builder
	for _, s := range a {
		if slices.Contains(b, s) {
			continue
		}
		if i := slices.IndexFunc(b, func(o string) bool { return key(o) == key(s) }); i >= 0 {
			x, y := strings.Split(s, "\n"), strings.Split(b[i], "\n")
			for j := range max(len(x), len(y)) {
				if j >= len(x) || j >= len(y) || x[j] != y[j] {
					fmt.Fprintf(&d, "%s differs, first at line %d:\n  %s: %.300s\n  %s: %.300s\n", key(s), j+1, aName, at(x, j), bName, at(y, j))
					break
				}
			}
			continue
		}
		fmt.Fprintf(&d, "only %s: %.300s\n", aName, s)
	}
	for _, s := range b {
		if !slices.Contains(a, s) && !slices.ContainsFunc(a, func(o string) bool { return key(o) == key(s) && !slices.Contains(b, o) }) {
			fmt.Fprintf(&d, "only %s: %.300s\n", bName, s)
		}
	}
	return d.String()
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(no line)"
}
