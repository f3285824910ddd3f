// This file runs the coverage guard's table (testkit/gatetest/conformance,
// guard.go: the attacks of issue 43 and the rows an accept must open)
// against sqlgate on SQLite and on PostgreSQL through database/sql, each
// attack row with its negative control: a writer that forges the mark
// with the privilege to write the gate's own tables gets through, and the
// row sees it. On PostgreSQL the writer is a role of its own (not a
// superuser) with the privileges the gate's statements need.
package sqlgate_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/gatetest/sqlsession"
)

func TestGuardSQLite(t *testing.T)   { runGuard(t, conformanceFactory(sqliteBackend)) }
func TestGuardPostgres(t *testing.T) { runGuard(t, conformanceFactory(postgresBackend)) }

// runGuard runs the guard table and every attack row's negative control,
// in parallel (each on a database of its own).
func runGuard(t *testing.T, f conformance.Factory) {
	conformance.RunGuard(t, f, true)
	for _, c := range conformance.GuardCases() {
		if !c.Attack {
			continue
		}
		t.Run("NegativeControl/"+c.Name, func(t *testing.T) {
			t.Parallel()
			if why := conformance.GuardFails(t, f, c.Name); !strings.Contains(why, "admitted") && !strings.Contains(why, "moved") {
				t.Fatalf("with the mark forged the row must see the write land; it said %q", why)
			}
		})
	}
}

// appRole is the PostgreSQL role the writer sessions run as: no
// superuser, the privileges the gate's statements and the business table
// need, and nothing else.
const appRole = "fg_app"

// grantApp creates appRole (once per cluster) and grants it what the
// gate's own statements use on db's tables.
func grantApp(ctx context.Context, db *sql.DB) error {
	for _, s := range []string{
		`DO $$ BEGIN CREATE ROLE ` + appRole + ` NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
		`GRANT USAGE ON SCHEMA public TO ` + appRole,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + appRole,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ` + appRole,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func (h *sqlHarness) Protect(ctx context.Context, mode gate.Mode) error {
	return h.g.Protect(ctx, h.db, "conf_effects", mode, "conformance")
}

func (h *sqlHarness) Coverage(ctx context.Context) (gate.Coverage, error) {
	return h.g.Coverage(ctx, h.db)
}

func (h *sqlHarness) Refused(err error) bool { return isRefusal(err) }

// Session opens the writer's connection: on PostgreSQL one of the pool's
// as appRole; on SQLite a second handle on the same file (the first has
// one connection), with a gate of its own (the gate prepares its
// statements per handle).
func (h *sqlHarness) Session(ctx context.Context) (conformance.Session, error) {
	g, db := h.g, h.db
	if h.sqlite {
		var path string
		if err := h.db.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
			return nil, err
		}
		var err error
		if db, err = sqlgate.OpenSQLite(path, "NORMAL"); err != nil {
			return nil, err
		}
		if g, err = sqlgate.New(h.cfg); err == nil {
			err = g.Migrate(ctx, db)
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	a := sqlsession.Adapter{Table: "conf_effects", Loosen: pgLoosen, Forge: pgForge,
		Apply: func(ctx context.Context, tx *sql.Tx, caller string, m *gate.Mutation, business func(context.Context, *sql.Tx) error) (gate.Receipt, error) {
			return g.Apply(ctx, tx, caller, m, business)
		}}
	if h.sqlite {
		a.Rebind, a.Loosen, a.Forge = sqliteRebind, sqliteLoosen, sqliteForge
	} else if _, err := conn.ExecContext(ctx, `SET ROLE `+appRole); err != nil {
		conn.Close()
		return nil, err
	}
	s := sqlsession.New(a, conn)
	h.t.Cleanup(func() {
		s.Close()
		if db != h.db {
			db.Close()
		}
	})
	return s, nil
}

// pgLoosen sets what schema 8's guard took as the mark.
func pgLoosen(ctx context.Context, q sqlsession.Execer, local bool) error {
	_, err := q.ExecContext(ctx, `SELECT set_config('fencegate.apply', '1', $1), set_config('fencegate.writes', '0', $1)`, local)
	return err
}

// pgForge records an accept of resource by hand, as the gate's tables
// let whoever may write them: the fence state moved to segment 1 of the
// next fence, and its receipt, stored by this transaction.
func pgForge(ctx context.Context, q sqlsession.Execer, resource string) error {
	d := sha256.Sum256([]byte("forged"))
	_, err := q.ExecContext(ctx, `WITH u AS (UPDATE fencegate_resources SET highest_fence = highest_fence + 1, last_seq = 1, root = $2
  WHERE resource = $1 RETURNING highest_fence)
INSERT INTO fencegate_receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
SELECT $1, u.highest_fence, 1, 'forged', $2, $2, $2, 0, 'enforce' FROM u`, resource, d[:])
	return err
}

// sqliteLoosen turns the connection's foreign keys off: the nearest thing
// SQLite has to a setting the guard depends on.
func sqliteLoosen(ctx context.Context, q sqlsession.Execer, _ bool) error {
	_, err := q.ExecContext(ctx, `PRAGMA foreign_keys = OFF`)
	return err
}

// sqliteForge writes the mark of an accept of resource, and what lets it
// be written and committed (the check of foreign keys dropped, the
// reference that fails a commit satisfied): SQLite has no roles, so any
// code with the database can (the negative control).
func sqliteForge(ctx context.Context, q sqlsession.Execer, resource string) error {
	for _, s := range []string{
		`DROP TRIGGER IF EXISTS fencegate_apply_marks_need_foreign_keys`,
		`INSERT OR IGNORE INTO fencegate_never_committed (id) VALUES (0)`,
	} {
		if _, err := q.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	_, err := q.ExecContext(ctx, `INSERT OR REPLACE INTO fencegate_apply_marks (resource, enforce) VALUES (?1, 1)`, resource)
	return err
}

func sqliteRebind(q string) string { return strings.ReplaceAll(q, "$", "?") }

// TestPostgresWriterRoleCannotForge: a role with only the business
// table's privileges (the application's other code, a reporting job, a
// psql user) is refused the mark itself, and so its writes; granted the
// gate's tables, it forges an accept and its write lands.
func TestPostgresWriterRoleCannotForge(t *testing.T) {
	e := newEnv(t, postgresBackend, nil)
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr("role/r", 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	e.exec(`DO $$ BEGIN CREATE ROLE fg_reporter NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`)
	e.exec(`GRANT USAGE ON SCHEMA public TO fg_reporter`)
	e.exec(`GRANT SELECT, INSERT, UPDATE, DELETE ON ledger TO fg_reporter`)
	e.exec(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO fg_reporter`)
	attempt := func() error {
		tx, err := e.db.BeginTx(e.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, s := range []string{`SET LOCAL ROLE fg_reporter`, `SELECT set_config('fencegate.apply', '1', true)`} {
			if _, err := tx.ExecContext(e.ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		if err := pgForge(e.ctx, tx, "role/r"); err != nil {
			return err
		}
		_, err = tx.ExecContext(e.ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ('role/r', 0, 0, 'forged')`)
		if err == nil {
			err = tx.Commit()
		}
		return err
	}
	var pe interface{ SQLState() string }
	if err := attempt(); !errors.As(err, &pe) || pe.SQLState() != "42501" {
		t.Fatalf("a role without the gate's tables forging a mark: %v", err)
	}
	e.exec(`GRANT SELECT, INSERT, UPDATE ON fencegate_resources, fencegate_receipts TO fg_reporter`)
	if err := attempt(); err != nil {
		t.Fatalf("negative control: granted the gate's tables, the role should forge an accept: %v", err)
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE payload = 'forged'`); n != 1 {
		t.Fatalf("%d forged rows", n)
	}
}

func TestGuardPostgresPgx(t *testing.T) { runGuard(t, pgxConformanceFactory) }

// Session opens the writer's pgx connection, as appRole; its Apply is
// RunPgx, which runs a transaction of its own (before the session's open
// transaction sends its first statement).
func (h *pgxHarness) Session(ctx context.Context) (conformance.Session, error) {
	c, err := h.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	conn := c.Hijack() // never back to the pool: an attack may loosen it
	h.t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `SET ROLE `+appRole); err != nil {
		return nil, err
	}
	return &pgxSession{g: h.g, conn: conn}, nil
}

// pgxSession is conformance.Session on one pgx connection. Begin is lazy:
// BEGIN goes with the first statement after it.
type pgxSession struct {
	g             *sqlgate.Gate
	conn          *pgx.Conn
	pending, open bool
}

func (s *pgxSession) Begin(context.Context) error { s.pending = true; return nil }

func (s *pgxSession) start(ctx context.Context) error {
	if s.pending && !s.open {
		if _, err := s.conn.Exec(ctx, "BEGIN"); err != nil {
			return err
		}
		s.open = true
	}
	return nil
}

func (s *pgxSession) end(ctx context.Context, stmt string) error {
	open := s.open
	s.pending, s.open = false, false
	if !open {
		return nil
	}
	_, err := s.conn.Exec(ctx, stmt)
	return err
}

func (s *pgxSession) Commit(ctx context.Context) error   { return s.end(ctx, "COMMIT") }
func (s *pgxSession) Rollback(ctx context.Context) error { return s.end(ctx, "ROLLBACK") }

func (s *pgxSession) Write(ctx context.Context, resource, payload string) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	return pgxWriter{s.conn, s.open}.Write(ctx, resource, payload)
}

func (s *pgxSession) Move(ctx context.Context, from, to string) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	return pgxWriter{s.conn, s.open}.Move(ctx, from, to)
}

func (s *pgxSession) Loosen(ctx context.Context, local bool) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	return pgxWriter{s.conn, s.open}.Loosen(ctx, local)
}

func (s *pgxSession) Forge(ctx context.Context, resource string) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	return pgxWriter{s.conn, s.open}.Forge(ctx, resource)
}

func (s *pgxSession) Apply(ctx context.Context, caller string, m *gate.Mutation, body func(context.Context, conformance.Writer) error) (gate.Receipt, error) {
	if s.open {
		return gate.Receipt{}, errors.New("pgxSession: RunPgx runs its own transaction; apply before the open one's first statement")
	}
	return s.g.RunPgx(ctx, s.conn, caller, m, func(ctx context.Context, q sqlgate.PgxQuerier) error {
		return body(ctx, pgxWriter{q, true})
	})
}

// pgxWriter is conformance.Writer through pgx's interface; in a
// transaction each write runs under a savepoint.
type pgxWriter struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}
	inTx bool
}

func (w pgxWriter) exec(ctx context.Context, q string, args ...any) error {
	if !w.inTx {
		_, err := w.q.Exec(ctx, q, args...)
		return err
	}
	if _, err := w.q.Exec(ctx, "SAVEPOINT conformance_write"); err != nil {
		return err
	}
	_, err := w.q.Exec(ctx, q, args...)
	end := "RELEASE SAVEPOINT conformance_write"
	if err != nil {
		end = "ROLLBACK TO SAVEPOINT conformance_write"
	}
	if _, eerr := w.q.Exec(ctx, end); eerr != nil {
		return errors.Join(err, eerr)
	}
	return err
}

func (w pgxWriter) Write(ctx context.Context, resource, payload string) error {
	return w.exec(ctx, `INSERT INTO conf_effects (resource, payload) VALUES ($1, $2)`, resource, payload)
}

func (w pgxWriter) Move(ctx context.Context, from, to string) error {
	return w.exec(ctx, `UPDATE conf_effects SET resource = $2 WHERE resource = $1`, from, to)
}

func (w pgxWriter) Loosen(ctx context.Context, local bool) error {
	_, err := w.q.Exec(ctx, `SELECT set_config('fencegate.apply', '1', $1), set_config('fencegate.writes', '0', $1)`, local)
	return err
}

func (w pgxWriter) Forge(ctx context.Context, resource string) error {
	d := sha256.Sum256([]byte("forged"))
	_, err := w.q.Exec(ctx, `WITH u AS (UPDATE fencegate_resources SET highest_fence = highest_fence + 1, last_seq = 1, root = $2
  WHERE resource = $1 RETURNING highest_fence)
INSERT INTO fencegate_receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
SELECT $1, u.highest_fence, 1, 'forged', $2, $2, $2, 0, 'enforce' FROM u`, resource, d[:])
	return err
}
