// This file proves RunPgx is Run over pgx's own interface: the shared
// adapter table passes through it; an accepted write with a status proof
// takes three round trips, as a plain pgx transaction of one statement
// does; and when the receipt travels with COMMIT and fails, nothing of
// the write is committed.
package sqlgate_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// pgxHarness is sqlHarness with Apply through RunPgx on a pool's
// connections.
type pgxHarness struct {
	sqlHarness
	pool *pgxpool.Pool
}

func TestConformancePostgresPgx(t *testing.T) { conformance.Run(t, pgxConformanceFactory) }

func TestBatchProofsPostgresPgx(t *testing.T) { conformance.RunBatchProofs(t, pgxConformanceFactory) }

// pgxConformanceFactory is the conformance factory of RunPgx.
func pgxConformanceFactory(t testing.TB, cfg conformance.Config) conformance.Harness {
	{
		dsn := pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off")
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		base := conformanceFactory(backend{"postgres", sqlgate.Postgres, func(testing.TB) *sql.DB { return db }})(t, cfg).(*sqlHarness)
		pool, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return &pgxHarness{sqlHarness: *base, pool: pool}
	}
}

func (h *pgxHarness) Apply(ctx context.Context, caller string, m *gate.Mutation, payload string) (r gate.Receipt, err error) {
	if aerr := h.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		r, err = h.g.RunPgx(ctx, c.Conn(), caller, m, func(ctx context.Context, q sqlgate.PgxQuerier) error {
			if _, err := q.Exec(ctx, `INSERT INTO conf_effects (resource, payload) VALUES ($1, $2)`, m.Resource, payload); err != nil {
				return err
			}
			if payload == conformance.FailPayload {
				return conformance.ErrBusinessFailed
			}
			return nil
		})
		return nil
	}); aerr != nil {
		return gate.Receipt{}, aerr
	}
	return r, err
}

// pgxEnv is a PostgreSQL gate, migrated through database/sql, with one
// pgx connection whose round trips a tracer counts.
type pgxEnv struct {
	*env
	conn  *pgx.Conn
	trips *atomic.Int64
}

func newPgxEnv(t *testing.T) *pgxEnv {
	return newPgxEnvDSN(t, pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off"))
}

func newPgxEnvDSN(t *testing.T, dsn string) *pgxEnv {
	trips := &atomic.Int64{}
	e, conn := openPgxEnv(t, dsn, tripCounter{trips})
	return &pgxEnv{env: e, conn: conn, trips: trips}
}

// tripCounter counts round trips: each query and each batch is one (once
// its statements are in the connection's cache).
type tripCounter struct{ n *atomic.Int64 }

func (c tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// pgxWrite is the ledger write through a PgxQuerier.
func pgxWrite(m *gate.Mutation) sqlgate.PgxBusinessFunc {
	return func(ctx context.Context, q sqlgate.PgxQuerier) error {
		_, err := q.Exec(ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, $2, $3, $4)`,
			m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), "x")
		return err
	}
}

// pgxPlainWrite is the natural baseline: BEGIN, the INSERT, COMMIT.
func pgxPlainWrite(ctx context.Context, conn *pgx.Conn, m *gate.Mutation) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	if err := pgxWrite(m)(ctx, tx); err != nil {
		tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

func TestRunPgxTakesAsManyRoundTripsAsAPlainWrite(t *testing.T) {
	testRunPgxRoundTrips(t, false)
}

// TestRunPgxGuardedTakesAsManyRoundTripsAsAPlainWrite: into a protected
// table too, the guard's mark (the receipt, stored in the lock
// statement's round trip) adds none.
func TestRunPgxGuardedTakesAsManyRoundTripsAsAPlainWrite(t *testing.T) {
	testRunPgxRoundTrips(t, true)
}

func testRunPgxRoundTrips(t *testing.T, guarded bool) {
	e := newPgxEnv(t)
	plainWrite := func(m *gate.Mutation) error { return pgxPlainWrite(e.ctx, e.conn, m) }
	if guarded {
		e.protectLedger(t, true) // the plain write goes to the unprotected twin
		plainWrite = func(m *gate.Mutation) error { return pgxTwinWrite(e.ctx, e.conn, m, "") }
	}
	ms := segments(e.env, 4)
	for _, m := range ms[:2] { // warm the statement cache: preparing costs a trip once
		if _, err := e.g.RunPgx(e.ctx, e.conn, owner, m, pgxWrite(m)); err != nil {
			t.Fatal(err)
		}
		if err := plainWrite(m); err != nil {
			t.Fatal(err)
		}
	}
	before := e.trips.Load()
	if _, err := e.g.RunPgx(e.ctx, e.conn, owner, ms[2], pgxWrite(ms[2])); err != nil {
		t.Fatal(err)
	}
	fenced := e.trips.Load() - before
	before = e.trips.Load()
	if err := plainWrite(ms[3]); err != nil {
		t.Fatal(err)
	}
	plain := e.trips.Load() - before
	if fenced != 3 || plain != 3 {
		t.Fatalf("round trips: fenced %d, plain %d; want 3 and 3", fenced, plain)
	}
}

func TestRunPgxFailedReceiptAtCommitCommitsNothing(t *testing.T) {
	e := newPgxEnv(t)
	// Without a status proof the gate asks no one and cannot speculate;
	// give it a querier that says HELD, so the receipt is stored after
	// the business change and travels with COMMIT. A trigger the test
	// adds makes that insert fail.
	e.g = mustGate(t, e.env, gate.QuerierFunc(func(_ context.Context, g *grant.Grant) (grant.State, uint64, error) {
		return grant.StateHeld, g.IssuerEpoch, nil
	}))
	m := gatetest.WithoutStatus(e.iss.Mutation(wr("pgx/held", 5, "op-held"), 1, "p"))
	e.exec(`CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'test: refused'; END $$`)
	e.exec(`CREATE TRIGGER test_refuse BEFORE INSERT ON fencegate_receipts FOR EACH ROW EXECUTE FUNCTION test_refuse()`)
	if _, err := e.g.RunPgx(e.ctx, e.conn, owner, m, pgxWrite(m)); err == nil {
		t.Fatal("the write was accepted although its receipt failed")
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE resource = 'pgx/held'`); n != 0 {
		t.Fatalf("%d business rows committed without their receipt", n)
	}
	if st := e.state("pgx/held"); st.HighestFence != 0 {
		t.Fatalf("highest fence %d after a failed write", st.HighestFence)
	}
	// The control: without the trigger the same write is accepted.
	e.exec(`DROP TRIGGER test_refuse ON fencegate_receipts`)
	if _, err := e.g.RunPgx(e.ctx, e.conn, owner, m, pgxWrite(m)); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE resource = 'pgx/held'`); n != 1 {
		t.Fatalf("%d business rows after the accept, want 1", n)
	}
}

// mustGate returns a gate like e's, with querier.
func mustGate(t *testing.T, e *env, querier gate.StatusQuerier) *sqlgate.Gate {
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.Postgres, Policy: gate.Policy{Verifier: e.iss.Verifier}, Querier: querier, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(e.ctx, e.db); err != nil {
		t.Fatal(fmt.Errorf("migrate: %w", err))
	}
	return g
}

// TestPipelinedStoreNeedsTheLockedRow: the pipelined store stores only
// when this transaction's lock statement locked the row. Sent alone on a
// row that admits the accept (as after a lock statement that found no
// row, while another transaction created it), it stores nothing, even
// after a session set what schema 8 took as the lock statement's mark;
// the control, the same statement behind the lock statement, stores.
func TestPipelinedStoreNeedsTheLockedRow(t *testing.T) {
	e := newPgxEnv(t)
	m := e.iss.Mutation(wr("pgx/store", 5, "op-store"), 1, "p")
	e.exec(`INSERT INTO fencegate_resources (resource, mode) VALUES ($1, 'enforce')`, m.Resource)
	g, err := grant.ParseGrant(m.Grant)
	if err != nil {
		t.Fatal(err)
	}
	root, gd := g.OperationRoot, g.Digest()
	args := []any{m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), m.OperationID, root[:], m.PayloadDigest[:], gd[:],
		int64(1), "enforce", int64(g.PolicyGeneration), int64(0), int64(500)}
	store := func(lockFirst bool) int64 {
		tx, err := e.conn.Begin(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(e.ctx)
		if _, err := tx.Exec(e.ctx, `SELECT set_config('fencegate.apply', '1', true)`); err != nil {
			t.Fatal(err)
		}
		if lockFirst {
			rows, err := tx.Query(e.ctx, `SELECT 1 FROM fencegate_resources WHERE resource = $1 FOR UPDATE`, m.Resource)
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
		tag, err := tx.Exec(e.ctx, sqlgate.SpeculateStoreSQL(e.g), args...)
		if err != nil {
			t.Fatal(err)
		}
		return tag.RowsAffected()
	}
	if n := store(false); n != 0 {
		t.Fatalf("the store stored %d receipts without the lock statement's row", n)
	}
	if n := store(true); n != 1 {
		t.Fatalf("behind the lock statement the store stored %d receipts, want 1", n)
	}
}
