// This file proves the gate's SQL reads as one source: each function,
// type and trigger is created in exactly one place of sql/*.sql, and
// no migration (sql/migrations) creates one, so the definition a reader
// opens is the one that runs.
package pggate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// definition matches a CREATE of a function (with its argument types),
// a type or a trigger (with its table).
var definition = regexp.MustCompile(`(?m)^CREATE (?:OR REPLACE )?(FUNCTION [\w.]+\([^)]*\)|TYPE [\w.]+|(?:CONSTRAINT )?TRIGGER \w+ [^;]*? ON [\w.]+)`)

// argName drops a parameter's name, keeping its type.
var argName = regexp.MustCompile(`(?i)\b\w+ ((?:TEXT|BIGINT|INT|BOOLEAN|BYTEA|NUMERIC|REGCLASS|JSONB|XID8|fencegate\.\w+)(?:\[\])?)`)

// definitions lists where each object of files is created.
func definitions(files map[string]string) map[string][]string {
	where := map[string][]string{}
	for name, text := range files {
		for _, m := range definition.FindAllStringSubmatch(text, -1) {
			key := m[1]
			if head, args, ok := strings.Cut(key, "("); ok && strings.HasPrefix(key, "FUNCTION") {
				key = head + "(" + argName.ReplaceAllString(args, "$1")
			}
			if strings.Contains(key, "TRIGGER") {
				f := strings.Fields(key)
				key = f[0] + " " + f[1] + " ON " + f[len(f)-1]
			}
			where[key] = append(where[key], name)
		}
	}
	return where
}

func readSQLFiles(t *testing.T, glob string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(glob)
	if err != nil || len(names) == 0 {
		t.Fatalf("%s: %v %v", glob, names, err)
	}
	files := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = string(b)
	}
	return files
}

func TestEachObjectIsDefinedOnce(t *testing.T) {
	source := readSQLFiles(t, "sql/*.sql")
	where := definitions(source)
	if len(where) < 60 {
		t.Fatalf("%d definitions found: the pattern sees too little", len(where))
	}
	for key, files := range where {
		if len(files) > 1 {
			t.Errorf("%s is created %d times: %v", key, len(files), files)
		}
	}
	for name, text := range readSQLFiles(t, "sql/migrations/*.sql") {
		if m := definition.FindString(text); m != "" {
			t.Errorf("%s creates %q: a migration holds tables and data only, the source the code", name, m)
		}
	}
	// Negative control: a function created again in another file, under
	// other parameter names, is caught.
	source["sql/extra.sql"] = "CREATE OR REPLACE FUNCTION fencegate.order_of(a BIGINT, b BIGINT, c BIGINT) RETURNS TEXT LANGUAGE sql AS $$ SELECT '' $$;\n"
	if files := definitions(source)["FUNCTION fencegate.order_of(BIGINT, BIGINT, BIGINT)"]; len(files) != 2 {
		t.Fatalf("a second order_of: found in %v, want 2 files", files)
	}
}
