// This file sets up the one behavioural suite on each database: SQLite
// (always) and PostgreSQL (a throwaway cluster, or FENCEGATE_TEST_PG_DSN).
package sqlgate_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// backend opens a fresh, empty database of one kind.
type backend struct {
	name    string
	dialect *sqlgate.Dialect
	open    func(t testing.TB) *sql.DB
}

var sqliteBackend = backend{"sqlite", sqlgate.SQLite, func(t testing.TB) *sql.DB {
	db, err := sqlgate.OpenSQLite(filepath.Join(t.TempDir(), "gate.db"), "NORMAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}}

var postgresBackend = backend{"postgres", sqlgate.Postgres, func(t testing.TB) *sql.DB {
	dsn := pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}}

func TestSQLite(t *testing.T)   { runSuite(t, sqliteBackend) }
func TestPostgres(t *testing.T) { runSuite(t, postgresBackend) }

// env is one suite test's database, gate and issuer.
type env struct {
	t     testing.TB
	ctx   context.Context
	db    *sql.DB
	g     *sqlgate.Gate
	iss   *gatetest.Issuer
	clock *fakeclock.Clock
}

const ledgerDDL = `CREATE TABLE ledger (id %s, resource TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL, payload TEXT NOT NULL)`

func newEnv(t testing.TB, b backend, querier gate.StatusQuerier) *env {
	t.Helper()
	iss := gatetest.NewIssuer("main")
	iss.RevokeBelow(4)
	clock := fakeclock.New(iss.Now.Add(time.Second))
	e := newEnvWith(t, b, sqlgate.Config{Policy: gate.Policy{Verifier: iss.Verifier}, Querier: querier, Clock: clock})
	e.iss, e.clock = iss, clock
	return e
}

// newEnvWith is newEnv with the gate's configuration given (the dialect
// is the backend's); iss and clock are left for the caller.
func newEnvWith(t testing.TB, b backend, cfg sqlgate.Config) *env {
	t.Helper()
	cfg.Dialect = b.dialect
	g, err := sqlgate.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), db: b.open(t), g: g}
	if err := g.Migrate(e.ctx, e.db); err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(e.ctx, e.db); err != nil {
		t.Fatalf("second migrate must be a no-op: %v", err)
	}
	serial := "INTEGER PRIMARY KEY"
	if b.dialect == sqlgate.Postgres {
		serial = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	e.exec(fmt.Sprintf(ledgerDDL, serial))
	return e
}

func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	if _, err := e.db.ExecContext(e.ctx, q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

// write is the business change: one ledger row per accepted segment.
func write(m *gate.Mutation, payload string) sqlgate.BusinessFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, $2, $3, $4)`,
			m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), payload)
		return err
	}
}

// apply runs a mutation whose payload text is payload through Run.
func (e *env) apply(caller string, m *gate.Mutation, payload string) (gate.Receipt, error) {
	return e.g.Run(e.ctx, e.db, caller, m, write(m, payload))
}

func (e *env) state(resource string) gate.FenceState {
	e.t.Helper()
	st, err := e.g.State(e.ctx, e.db, resource)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRowContext(e.ctx, q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}
