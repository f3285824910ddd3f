// This file runs the shared adapter table (testkit/gatetest/conformance)
// against sqlgate on SQLite and on PostgreSQL, the same table the
// object-store and Redis adapters run.
package sqlgate_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

func TestConformanceSQLite(t *testing.T)   { conformance.Run(t, conformanceFactory(sqliteBackend)) }
func TestConformancePostgres(t *testing.T) { conformance.Run(t, conformanceFactory(postgresBackend)) }
func TestBatchProofsSQLite(t *testing.T) {
	conformance.RunBatchProofs(t, conformanceFactory(sqliteBackend))
}
func TestBatchProofsPostgres(t *testing.T) {
	conformance.RunBatchProofs(t, conformanceFactory(postgresBackend))
}

// sqlHarness drives a Gate on a fresh database whose business table is
// the effect log.
type sqlHarness struct {
	g      *sqlgate.Gate
	db     *sql.DB
	t      testing.TB
	cfg    sqlgate.Config // g's
	sqlite bool
}

func conformanceFactory(b backend) conformance.Factory {
	return func(t testing.TB, cfg conformance.Config) conformance.Harness {
		gcfg := sqlgate.Config{Dialect: b.dialect, Policy: gate.Policy{Verifier: cfg.Verifier}, Querier: cfg.Querier, Clock: cfg.Clock}
		g, err := sqlgate.New(gcfg)
		if err != nil {
			t.Fatal(err)
		}
		db := b.open(t)
		ctx := context.Background()
		if err := g.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		serial := "INTEGER PRIMARY KEY"
		if b.dialect == sqlgate.Postgres {
			serial = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE conf_effects (id %s, resource TEXT NOT NULL, payload TEXT NOT NULL)`, serial)); err != nil {
			t.Fatal(err)
		}
		if b.dialect == sqlgate.Postgres {
			if err := grantApp(ctx, db); err != nil {
				t.Fatal(err)
			}
		}
		return &sqlHarness{g: g, db: db, t: t, cfg: gcfg, sqlite: b.dialect == sqlgate.SQLite}
	}
}

func (h *sqlHarness) Apply(ctx context.Context, caller string, m *gate.Mutation, payload string) (gate.Receipt, error) {
	return h.g.Run(ctx, h.db, caller, m, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO conf_effects (resource, payload) VALUES ($1, $2)`, m.Resource, payload); err != nil {
			return err
		}
		if payload == conformance.FailPayload {
			return conformance.ErrBusinessFailed
		}
		return nil
	})
}

func (h *sqlHarness) State(ctx context.Context, resource string) (gate.FenceState, error) {
	return h.g.State(ctx, h.db, resource)
}

func (h *sqlHarness) QueryOperation(ctx context.Context, resource, op string, fence uint64) (gate.Answer, error) {
	return h.g.QueryOperation(ctx, h.db, resource, op, fence)
}

func (h *sqlHarness) Resume(ctx context.Context, resource string, floor uint64) error {
	return h.g.Resume(ctx, h.db, resource, floor, "conformance", "suite")
}

func (h *sqlHarness) SetMode(ctx context.Context, resource string, mode gate.Mode) error {
	return h.g.SetMode(ctx, h.db, resource, mode, "conformance")
}

func (h *sqlHarness) SetMinPolicyGeneration(ctx context.Context, resource string, gen uint64) error {
	return h.g.SetMinPolicyGeneration(ctx, h.db, resource, gen, "conformance")
}

func (h *sqlHarness) Effects(ctx context.Context, resource string) ([]string, error) {
	rows, err := h.db.QueryContext(ctx, `SELECT payload FROM conf_effects WHERE resource = $1 ORDER BY id`, resource)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (h *sqlHarness) Records(ctx context.Context, resource string) (conformance.Records, error) {
	var rs conformance.Records
	alarms, err := h.g.Records(ctx, h.db, "alarms", resource)
	if err != nil {
		return rs, err
	}
	for _, a := range alarms {
		rs.Alarms = append(rs.Alarms, gate.AlarmKind(a.Kind))
	}
	q, err := h.g.Records(ctx, h.db, "quarantine", resource)
	if err != nil {
		return rs, err
	}
	s, err := h.g.Records(ctx, h.db, "shadow_log", resource)
	rs.Quarantined, rs.ShadowLog = len(q), len(s)
	return rs, err
}
