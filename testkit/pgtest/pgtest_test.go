// This file proves the helper starts a usable throwaway server (or skips
// loudly) and that DSN parameters reach the session.
package pgtest_test

import (
	"database/sql"
	"os"
	"testing"

	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestNewDatabase(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	db, err := sql.Open("pgx", pgtest.WithParam(dsn, "synchronous_commit", "off"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sc, name string
	if err := db.QueryRow("SELECT current_setting('synchronous_commit'), current_database()").Scan(&sc, &name); err != nil {
		t.Fatal(err)
	}
	if sc != "off" || name == "postgres" {
		t.Fatalf("synchronous_commit=%s database=%s", sc, name)
	}
}

func TestWithParamURL(t *testing.T) {
	got := pgtest.WithParam("postgres://u@h:5/db?sslmode=disable", "dbname", "x")
	if got != "postgres://u@h:5/x?sslmode=disable" {
		t.Fatal(got)
	}
	if got := pgtest.WithParam("postgres://u@h/db", "synchronous_commit", "off"); got != "postgres://u@h/db?synchronous_commit=off" {
		t.Fatal(got)
	}
}
