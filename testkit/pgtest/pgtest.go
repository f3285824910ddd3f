// Package pgtest gives tests a real, throwaway PostgreSQL: one cluster per
// test binary, started on first use with initdb and postgres (as the
// unprivileged "postgres" user when the tests run as root), listening only
// on a unix socket in a temporary directory, and stopped and deleted when
// the binary exits (call Main from TestMain). FENCEGATE_TEST_PG_DSN points
// the tests at an existing server instead.
//
// Without binaries or a DSN the tests skip with a loud message, unless
// FENCEGATE_REQUIRE_PG=1 (CI), which turns the skip into a failure.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Environment variables.
const (
	EnvDSN     = "FENCEGATE_TEST_PG_DSN" // use this server instead of starting one
	EnvRequire = "FENCEGATE_REQUIRE_PG"  // "1": a missing PostgreSQL fails the test
	EnvBinDir  = "FENCEGATE_TEST_PG_BIN" // directory of initdb and postgres (default: search)
)

// StartTimeout bounds initdb plus server start.
const StartTimeout = 60 * time.Second

var (
	once    sync.Once
	shared  *cluster
	baseDSN string
	initErr error
	dbSeq   atomic.Uint64
)

// Main runs m and then stops the cluster if one was started. Use it as
// `func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }`.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop:", err)
		}
	}
	return code
}

// server returns the base DSN (database "postgres"), starting the shared
// cluster on first use.
func server() (string, error) {
	once.Do(func() {
		if dsn := os.Getenv(EnvDSN); dsn != "" {
			baseDSN = dsn
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		shared, initErr = startCluster(ctx)
		if initErr == nil {
			baseDSN = shared.dsn("postgres")
		}
	})
	return baseDSN, initErr
}

// errNoPostgres is returned when neither binaries nor a DSN exist.
var errNoPostgres = errors.New("no PostgreSQL: initdb/postgres not found and " + EnvDSN + " unset")

// NewDatabase creates a fresh, empty database for t and returns its DSN
// (pgx key=value form). The database is dropped when t ends. It skips t
// loudly when PostgreSQL is unavailable, or fails it when EnvRequire=1.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base, err := server()
	if err != nil {
		if errors.Is(err, errNoPostgres) && os.Getenv(EnvRequire) != "1" {
			t.Skipf("pgtest: *** SKIPPING PostgreSQL TESTS: %v. Install PostgreSQL or set %s; set %s=1 to make this a failure ***", err, EnvDSN, EnvRequire)
		}
		t.Fatalf("pgtest: PostgreSQL required but unavailable: %v", err)
	}
	name := fmt.Sprintf("fg_%d_%d", os.Getpid(), dbSeq.Add(1))
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer a.Close()
		a.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	return WithParam(base, "dbname", name)
}

// WithParam returns dsn with one more parameter (a later value wins). Any
// PostgreSQL run-time setting works, e.g. ("synchronous_commit", "off").
// It handles both key=value and postgres:// URL forms.
func WithParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if key == "dbname" {
			return replaceURLDatabase(dsn, value)
		}
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + key + "=" + value
	}
	return dsn + " " + key + "=" + value
}

func replaceURLDatabase(dsn, name string) string {
	rest := dsn[strings.Index(dsn, "://")+3:]
	query := ""
	if i := strings.Index(rest, "?"); i >= 0 {
		rest, query = rest[:i], rest[i:]
	}
	host, _, _ := strings.Cut(rest, "/")
	return dsn[:strings.Index(dsn, "://")+3] + host + "/" + name + query
}
