// This file proves the coverage guard: in enforce mode a write to a
// protected table outside an accepting Apply fails in the database, in
// shadow mode it is counted, and Coverage reports the measured share.
package sqlgate_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
)

func testCoverage(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "cov/one"
	e.exec(`CREATE TABLE audit (note TEXT NOT NULL)`)
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := e.g.Protect(e.ctx, e.db, "audit", gate.ModeShadow, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(e.ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ('x', 1, 1, 'direct')`); err == nil {
		t.Fatal("enforce: a direct write to a protected table succeeded")
	}
	if _, err := e.db.ExecContext(e.ctx, `UPDATE ledger SET payload = 'direct'`); err != nil {
		t.Fatalf("an update touching no rows fires no row trigger: %v", err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatalf("gated write: %v", err)
	}
	if _, err := e.db.ExecContext(e.ctx, `DELETE FROM ledger`); err == nil {
		t.Fatal("enforce: a direct delete succeeded")
	}
	// Inside the caller's own transaction: the mark ends with Apply, so a
	// direct write later in the same transaction is still refused.
	tx, err := e.db.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2 := e.iss.Mutation(wr(r, 5, "op-a"), 2, "p2")
	if _, err := e.g.Apply(e.ctx, tx, owner, m2, write(m2, "p2")); err != nil {
		t.Fatalf("gated write in caller tx: %v", err)
	}
	if _, err := tx.ExecContext(e.ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ('x', 1, 1, 'after')`); err == nil {
		t.Fatal("direct write after Apply in the same transaction succeeded")
	}
	tx.Rollback()
	tx, err = e.db.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Apply(e.ctx, tx, owner, m2, write(m2, "p2")); err != nil {
		t.Fatalf("gated write in caller tx: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e.exec(`INSERT INTO audit (note) VALUES ('direct')`) // shadow: lands, counted
	c, err := e.g.Coverage(e.ctx, e.db)
	if err != nil || c.Gated != 2 || c.Ungated != 1 || c.Ratio != 2.0/3 {
		t.Fatalf("coverage %+v %v", c, err)
	}
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeShadow, "ops"); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("enforce → shadow on a table: %v", err)
	}
	if err := e.g.Protect(e.ctx, e.db, "audit", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(e.ctx, `INSERT INTO audit (note) VALUES ('direct')`); err == nil {
		t.Fatal("audit now enforced: direct write succeeded")
	}
	if err := e.g.Protect(e.ctx, e.db, "ledger; DROP TABLE x", gate.ModeEnforce, "ops"); err == nil {
		t.Fatal("identifier injection accepted")
	}
}
