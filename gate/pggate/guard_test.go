// This file runs the coverage guard's table (testkit/gatetest/conformance,
// guard.go: the attacks of issue 43 and the rows an accept must open)
// against the gate inside PostgreSQL, the writer being the owner's
// mapped role (a member of fencegate_writer). Each attack row has its
// negative control: the writer's role granted the gate's receipts and
// fence state forges the mark, and the row sees the write land.
package pggate_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/gatetest/sqlsession"
)

func TestGuard(t *testing.T) {
	t.Parallel()
	conformance.RunGuard(t, newHarness, false) // roles are the cluster's: granted one at a time
	for _, c := range conformance.GuardCases() {
		if !c.Attack {
			continue
		}
		t.Run("NegativeControl/"+c.Name, func(t *testing.T) {
			if why := conformance.GuardFails(t, newHarness, c.Name); !strings.Contains(why, "admitted") && !strings.Contains(why, "moved") {
				t.Fatalf("with the mark forged the row must see the write land; it said %q", why)
			}
		})
	}
}

func (h *harness) Protect(ctx context.Context, mode gate.Mode) error {
	return pggate.Protect(ctx, h.w.db, "effects", mode, "conformance")
}

func (h *harness) Coverage(ctx context.Context) (gate.Coverage, error) {
	return pggate.Coverage(ctx, h.w.db)
}

func (h *harness) Refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pggate.StateUnguarded
}

// Session opens a connection whose session user is the suite's owner's
// role; its Apply is fencegate.apply in the session's transaction (under
// a savepoint) or in one of its own.
func (h *harness) Session(ctx context.Context) (conformance.Session, error) {
	role, err := h.w.roleOf(ctx, conformance.Owner)
	if err != nil {
		return nil, err
	}
	conn, err := h.w.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `SET SESSION AUTHORIZATION `+role); err != nil {
		conn.Close()
		return nil, err
	}
	s := sqlsession.New(sqlsession.Adapter{
		Table: "effects",
		Apply: func(ctx context.Context, tx *sql.Tx, _ string, m *gate.Mutation, business func(context.Context, *sql.Tx) error) (gate.Receipt, error) {
			if err := h.w.mirror(ctx, h.cfg.Verifier.Bundle()); err != nil {
				return gate.Receipt{}, err
			}
			if err := h.w.setClock(ctx, h.cfg.Clock.Now()); err != nil {
				return gate.Receipt{}, err
			}
			rc, err := pggate.Apply(ctx, tx, macProofs(m, h.cfg.Verifier.Bundle()))
			if err != nil {
				return rc, err
			}
			if err := business(ctx, tx); err != nil {
				return gate.Receipt{}, fmt.Errorf("%w: %w", pggate.ErrBusiness, err)
			}
			return rc, nil
		},
		Loosen: func(ctx context.Context, q sqlsession.Execer, local bool) error {
			_, err := q.ExecContext(ctx, `SELECT set_config('fencegate.apply', '1', $1), set_config('fencegate.writes', '0', $1)`, local)
			return err
		},
		Forge: func(ctx context.Context, q sqlsession.Execer, resource string) error {
			if _, err := h.w.db.ExecContext(ctx, `GRANT SELECT, INSERT, UPDATE ON fencegate.resources, fencegate.receipts TO `+role); err != nil {
				return err
			}
			_, err := q.ExecContext(ctx, `WITH u AS (UPDATE fencegate.resources SET highest_fence = highest_fence + 1, last_seq = 1
  WHERE resource = $1 RETURNING highest_fence)
INSERT INTO fencegate.receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
SELECT $1, u.highest_fence, 1, 'forged', 'x', 'x', 'x', 0, 'enforce' FROM u`, resource)
			return err
		},
	}, conn)
	h.w.t.Cleanup(s.Close)
	return s, nil
}

// TestGuardIgnoresTheWritersOperators: a writer that owns a schema
// defines an equality on transaction IDs that is always true and puts it
// first in its search_path, so that any old receipt would look like its
// own transaction's; the guard runs with search_path pg_catalog and
// refuses the write. Negative control: the same guard without its
// search_path takes the writer's equality and admits it.
func TestGuardIgnoresTheWritersOperators(t *testing.T) {
	ctx := context.Background()
	e := conformance.NewEnv(t, newHarness)
	h := e.H.(*harness)
	if _, err := h.Apply(ctx, conformance.Owner, e.Mut("ops/r", 5, "op-a", 1, "a1"), "a1"); err != nil {
		t.Fatal(err)
	}
	if err := h.Protect(ctx, gate.ModeEnforce); err != nil {
		t.Fatal(err)
	}
	role, err := h.w.roleOf(ctx, conformance.Owner)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE SCHEMA schemer AUTHORIZATION ` + role,
		`SET ROLE ` + role,
		`CREATE FUNCTION schemer.always(xid8, xid8) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'`,
		`CREATE OPERATOR schemer.= (LEFTARG = xid8, RIGHTARG = xid8, FUNCTION = schemer.always)`,
		`RESET ROLE`,
	} {
		if _, err := h.w.db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	attempt := func() string {
		return asWriter(t, h.w, `SET LOCAL search_path = schemer, pg_catalog, public; INSERT INTO effects (resource, payload) VALUES ('ops/r', 'hijacked')`)
	}
	if code := attempt(); code != pggate.StateUnguarded {
		t.Fatalf("a write with the writer's own equality first in its search_path: SQLSTATE %q", code)
	}
	var fn string
	if err := h.w.db.QueryRow(`SELECT tgfoid::regproc::text FROM pg_trigger WHERE tgname = 'fencegate_guard'`).Scan(&fn); err != nil {
		t.Fatal(err)
	}
	if _, err := h.w.db.Exec(`ALTER FUNCTION ` + fn + `() RESET search_path`); err != nil {
		t.Fatal(err)
	}
	if code := attempt(); code != "" {
		t.Fatalf("negative control: without its search_path the guard should take the writer's equality: SQLSTATE %q", code)
	}
}
