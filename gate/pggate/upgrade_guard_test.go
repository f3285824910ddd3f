// This file proves schema version 6's upgrade of the coverage guard: on
// a database installed at version 5 with tables protected there, an
// accept of one resource let its transaction write another resource's
// rows (the negative control, before the upgrade); after Install the
// guard admits only the accepted resource's rows, a protected table
// without a resource column admits none until protected again naming
// one. (That the upgraded schema is a fresh one's, object by object, is
// upgrade_test.go's.)
package pggate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

// guardTables creates keyed (rows name their resource) and, with
// unkeyed, a table without a resource column, writable by every role.
func guardTables(t *testing.T, w *world, unkeyed bool) {
	stmts := []string{`CREATE TABLE keyed (resource TEXT NOT NULL, v TEXT NOT NULL)`, `GRANT INSERT ON keyed TO PUBLIC`}
	if unkeyed {
		stmts = append(stmts, `CREATE TABLE unkeyed (v TEXT NOT NULL)`, `GRANT INSERT ON unkeyed TO PUBLIC`)
	}
	for _, s := range stmts {
		if _, err := w.db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
}

// applyWriting applies m as the suite's owner with a business change
// that inserts stmt (one row).
func applyWriting(ctx context.Context, e *conformance.Env, w *world, m *gate.Mutation, stmt string) error {
	if err := w.setClock(ctx, e.Clock.Now()); err != nil {
		return err
	}
	_, err := pggate.RunIn(ctx, w.db, w.beginAs(conformance.Owner), macProofs(m, e.Iss.Verifier.Bundle()), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, stmt)
		return err
	})
	return err
}

func TestGuardUpgradeToVersion6(t *testing.T) {
	ctx := context.Background()
	e := conformance.NewEnv(t, newHarness)
	w := newWorldAt(t, 5)
	if err := w.mirror(ctx, e.Iss.Verifier.Bundle()); err != nil {
		t.Fatal(err)
	}
	guardTables(t, w, true)
	for _, table := range []string{"keyed", "unkeyed"} {
		if _, err := w.db.Exec(`SELECT fencegate.protect($1, 'enforce', 'test')`, table); err != nil {
			t.Fatal(err)
		}
	}
	cross := `INSERT INTO keyed VALUES ('up/r', 'cross')`
	if err := applyWriting(ctx, e, w, e.Mut("up/a", 5, "op-a", 1, "a1"), cross); err != nil {
		t.Fatalf("negative control: version 5 refused another resource's row under an accept: %v", err)
	}
	if _, err := pggate.Install(ctx, w.db); err != nil {
		t.Fatal(err)
	}
	if err := applyWriting(ctx, e, w, e.Mut("up/a", 5, "op-a", 2, "a2"), cross); !isUnguarded(err) {
		t.Fatalf("another resource's row under an accept after the upgrade: %v", err)
	}
	if err := applyWriting(ctx, e, w, e.Mut("up/a", 5, "op-a", 2, "a2"), `INSERT INTO keyed VALUES ('up/a', 'own')`); err != nil {
		t.Fatalf("the accepted resource's row after the upgrade: %v", err)
	}
	if err := applyWriting(ctx, e, w, e.Mut("up/a", 5, "op-a", 3, "a3"), `INSERT INTO unkeyed VALUES ('up/a')`); !isUnguarded(err) {
		t.Fatalf("a table without a resource column after the upgrade: %v", err)
	}
	c, err := pggate.Coverage(ctx, w.db)
	if err != nil || len(c.Tables) != 2 || c.Tables[0].Resource != "resource" || c.Tables[1].Resource != "" {
		t.Fatalf("coverage after the upgrade: %+v, %v", c, err)
	}
	if err := pggate.ProtectResource(ctx, w.db, "unkeyed", "'up/' || v", gate.ModeEnforce, "test"); err != nil {
		t.Fatal(err)
	}
	if err := applyWriting(ctx, e, w, e.Mut("up/a", 5, "op-a", 3, "a3"), `INSERT INTO unkeyed VALUES ('a')`); err != nil {
		t.Fatalf("unkeyed protected again naming its resource: %v", err)
	}
}

// isUnguarded reports whether err is the guard's refusal.
func isUnguarded(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pggate.StateUnguarded
}
