// This file proves the coverage guard per resource: in enforce mode the
// database admits a write to a protected table only under an accept of
// the row's own resource in the same transaction (not another resource's,
// not after a shadow-mode pass-through, not by a later transaction), in
// shadow mode it counts the others, Coverage reports the measured share
// per table, and Protect refuses a resource that does not evaluate on the
// table. The attacks of issue 43 on every adapter are the guard table's
// (testkit/gatetest/conformance, guard.go).
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// writeRow is a business change that writes one ledger row of resource.
func writeRow(resource, payload string) sqlgate.BusinessFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, 0, 0, $2)`, resource, payload)
		return err
	}
}

func testCoverage(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r, other = "cov/one", "cov/other"
	e.exec(`CREATE TABLE audit (note TEXT NOT NULL, resource TEXT NOT NULL)`)
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := e.g.Protect(e.ctx, e.db, "audit", gate.ModeShadow, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(e.ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ('x', 1, 1, 'direct')`); !isRefusal(err) {
		t.Fatalf("enforce: a direct write to a protected table: %v", err)
	}
	if _, err := e.db.ExecContext(e.ctx, `UPDATE ledger SET payload = 'direct'`); err != nil {
		t.Fatalf("an update touching no rows fires no row trigger: %v", err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatalf("gated write: %v", err)
	}
	if _, err := e.db.ExecContext(e.ctx, `DELETE FROM ledger`); !isRefusal(err) {
		t.Fatalf("enforce: a direct delete: %v", err)
	}
	// An accept of r opens r's rows, not another resource's: the other's
	// row fails the business change, which takes r's row with it.
	m2 := e.iss.Mutation(wr(r, 5, "op-a"), 2, "p2")
	both := func(ctx context.Context, tx *sql.Tx) error {
		if err := writeRow(r, "own")(ctx, tx); err != nil {
			return err
		}
		return writeRow(other, "cross")(ctx, tx)
	}
	if _, err := e.g.Run(e.ctx, e.db, owner, m2, both); !errors.Is(err, sqlgate.ErrBusiness) || !errors.Is(err, sqlgate.ErrUnguarded) {
		t.Fatalf("a write of another resource inside an accept: %v", err)
	}
	// Inside the caller's own transaction, after Apply: another resource
	// is refused; r itself is admitted where the mark is the accept's
	// receipt (PostgreSQL: until the transaction ends) and refused where
	// it ends with Apply (SQLite).
	tx, err := e.db.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Apply(e.ctx, tx, owner, m2, write(m2, "p2")); err != nil {
		t.Fatalf("gated write in caller tx: %v", err)
	}
	if _, err := tx.ExecContext(e.ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, 1, 1, 'after')`, other); !isRefusal(err) {
		t.Fatalf("a write of another resource after Apply in the same transaction: %v", err)
	}
	tx.Rollback()
	tx, err = e.db.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Apply(e.ctx, tx, owner, m2, write(m2, "p2")); err != nil {
		t.Fatalf("gated write in caller tx: %v", err)
	}
	_, err = tx.ExecContext(e.ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, 1, 1, 'after')`, r)
	if b.dialect == sqlgate.Postgres && err != nil || b.dialect == sqlgate.SQLite && !isRefusal(err) {
		t.Fatalf("%s: a write of the accepted resource after Apply in the same transaction: %v", b.name, err)
	}
	if b.dialect == sqlgate.SQLite {
		tx.Rollback()
		if _, err := e.apply(owner, m2, "p2"); err != nil {
			t.Fatal(err)
		}
	} else if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e.exec(`INSERT INTO audit (note, resource) VALUES ('direct', 'x')`) // shadow: lands, counted
	gated := uint64(2)
	if b.dialect == sqlgate.Postgres {
		gated = 3 // the row written after Apply, under its accept
	}
	c, err := e.g.Coverage(e.ctx, e.db)
	if err != nil || c.Gated != gated || c.Ungated != 1 || len(c.Tables) != 2 ||
		c.Tables[0] != (gate.ProtectedTable{Table: "audit", Mode: gate.ModeShadow, Resource: "resource", Ungated: 1}) ||
		c.Tables[1] != (gate.ProtectedTable{Table: "ledger", Mode: gate.ModeEnforce, Resource: "resource"}) {
		t.Fatalf("coverage %+v %v", c, err)
	}
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeShadow, "ops"); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("enforce → shadow on a table: %v", err)
	}
	if err := e.g.Protect(e.ctx, e.db, "audit", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(e.ctx, `INSERT INTO audit (note, resource) VALUES ('direct', 'x')`); !isRefusal(err) {
		t.Fatalf("audit now enforced: direct write: %v", err)
	}
	if err := e.g.Protect(e.ctx, e.db, "ledger; DROP TABLE x", gate.ModeEnforce, "ops"); err == nil {
		t.Fatal("identifier injection accepted")
	}
}

// isRefusal reports whether err is the guard's refusal (FG020).
func isRefusal(err error) bool {
	return err != nil && strings.Contains(err.Error(), "FG020")
}

// testProtectResource: the resource may be an expression over the row's
// columns, checked on the table when protected; one that does not
// evaluate, could leave its trigger, or names a missing table is refused.
func testProtectResource(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	e.exec(`CREATE TABLE accounts (account TEXT NOT NULL, balance BIGINT NOT NULL)`)
	for _, bad := range []string{"nosuchcolumn", "'acct/' || nosuch", "account; DROP TABLE accounts", "account -- x", "$1", ""} {
		if err := e.g.ProtectResource(e.ctx, e.db, "accounts", bad, gate.ModeEnforce, "ops"); err == nil {
			t.Fatalf("resource %q accepted", bad)
		}
	}
	if err := e.g.ProtectResource(e.ctx, e.db, "nosuchtable", "resource", gate.ModeEnforce, "ops"); err == nil {
		t.Fatal("a missing table was protected")
	}
	if err := e.g.ProtectResource(e.ctx, e.db, "accounts", "'acct/' || account", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	m := e.iss.Mutation(wr("acct/7", 5, "op-a"), 1, "p")
	credit := func(account string) sqlgate.BusinessFunc {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO accounts (account, balance) VALUES ($1, 10)`, account)
			return err
		}
	}
	if _, err := e.g.Run(e.ctx, e.db, owner, m, credit("8")); !errors.Is(err, sqlgate.ErrUnguarded) {
		t.Fatalf("account 8 under an accept of acct/7: %v", err)
	}
	if _, err := e.g.Run(e.ctx, e.db, owner, m, credit("7")); err != nil {
		t.Fatalf("account 7 under an accept of acct/7: %v", err)
	}
	m2 := e.iss.Mutation(wr("acct/7", 5, "op-a"), 2, "p")
	move := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE accounts SET account = '8' WHERE account = '7'`)
		return err
	}
	if _, err := e.g.Run(e.ctx, e.db, owner, m2, move); !errors.Is(err, sqlgate.ErrUnguarded) {
		t.Fatalf("moving acct/7's row to acct/8 under an accept of acct/7 alone: %v", err)
	}
	if n := e.count(`SELECT count(*) FROM accounts WHERE account = '7'`); n != 1 {
		t.Fatalf("%d rows of account 7", n)
	}
}

// TestPostgresGuardIgnoresTheWritersOperators: a writer that owns a schema
// defines an equality on transaction IDs that is always true and puts
// its schema first in its search_path, so that any old receipt would
// look like its own transaction's. The guard names pg_catalog's operator
// and refuses the write. Negative control: the same guard with bare
// operators takes the writer's and admits it.
func TestPostgresGuardIgnoresTheWritersOperators(t *testing.T) {
	e := newEnv(t, postgresBackend, nil)
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr("ops/r", 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`DO $$ BEGIN CREATE ROLE fg_schemer NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
		`GRANT USAGE ON SCHEMA public TO fg_schemer`,
		`GRANT SELECT, INSERT ON ledger TO fg_schemer`,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO fg_schemer`,
		`CREATE SCHEMA schemer AUTHORIZATION fg_schemer`,
		`SET ROLE fg_schemer`,
		`CREATE FUNCTION schemer.always(xid8, xid8) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'`,
		`CREATE OPERATOR schemer.= (LEFTARG = xid8, RIGHTARG = xid8, FUNCTION = schemer.always)`,
		`RESET ROLE`,
	} {
		e.exec(s)
	}
	attempt := func() error {
		tx, err := e.db.BeginTx(e.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, s := range []string{`SET LOCAL ROLE fg_schemer`, `SET LOCAL search_path = schemer, pg_catalog, public`} {
			if _, err := tx.ExecContext(e.ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		_, err = tx.ExecContext(e.ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ('ops/r', 0, 0, 'hijacked')`)
		return err
	}
	if err := attempt(); !isRefusal(err) {
		t.Fatalf("a write with the writer's own equality first in its search_path: %v", err)
	}
	var def string
	if err := e.db.QueryRow(`SELECT pg_get_functiondef('fencegate_guard_ledger'::regproc)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	bare := strings.ReplaceAll(def, "OPERATOR(pg_catalog.=)", "=")
	if bare == def {
		t.Fatal("the guard names no qualified operator")
	}
	e.exec(bare)
	if err := attempt(); err != nil {
		t.Fatalf("negative control: with bare operators the writer's equality should admit the write: %v", err)
	}
}

// TestPostgresGuardReadsOneReceiptPerRow: the guard finds the accept's
// receipt by its key, whatever the number of receipts the resource has:
// over writes of one resource's segments, the receipts' index returns one
// entry per write. Negative control: the same condition as an EXISTS,
// planned generically as the guard's statements are, returns every
// receipt of the resource.
func TestPostgresGuardReadsOneReceiptPerRow(t *testing.T) {
	const writes = 120
	e := newEnv(t, postgresBackend, nil)
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	conn, err := e.db.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func() int64 {
		var n int64
		for _, q := range []string{`SELECT pg_stat_force_next_flush()`, `SELECT pg_stat_clear_snapshot()`} {
			if _, err := conn.ExecContext(e.ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := conn.QueryRowContext(e.ctx, `SELECT coalesce(sum(idx_tup_read), 0)::bigint FROM pg_stat_user_indexes WHERE relname = 'fencegate_receipts'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ms := segments(e, writes)
	before := read()
	for _, m := range ms {
		tx, err := conn.BeginTx(e.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.g.Apply(e.ctx, tx, owner, m, write(m, "x")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if n := read() - before; n > 2*writes {
		t.Fatalf("%d writes read %d receipt index entries: the guard scans the resource's receipts", writes, n)
	}
	exists := `SELECT FROM fencegate_resources r WHERE r.resource = $1 AND EXISTS (SELECT FROM fencegate_receipts c
  WHERE c.resource = r.resource AND c.fence = r.highest_fence AND c.seq = r.last_seq AND c.xid = pg_current_xact_id())`
	for _, q := range []string{`SET plan_cache_mode = force_generic_plan`, `PREPARE guard_exists(text) AS ` + exists} {
		if _, err := conn.ExecContext(e.ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	before = read()
	if _, err := conn.ExecContext(e.ctx, `EXECUTE guard_exists('`+ms[0].Resource+`')`); err != nil {
		t.Fatal(err)
	}
	if n := read() - before; n < writes {
		t.Fatalf("negative control: the EXISTS form read %d receipt index entries, want all %d of the resource's", n, writes)
	}
	conn.ExecContext(e.ctx, `RESET plan_cache_mode`)
}
