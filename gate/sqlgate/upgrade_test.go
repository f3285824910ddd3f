// This file proves the schema upgrades: a database at schema 1 upgrades
// in place and then refuses, even from outside the gate, a lower highest
// fence and any change to a receipt; receipts and fence state written
// before schema version 3 (when an accept took three statements) stay
// valid after the upgrade to the one-statement accept and to schema 5's
// compact layout:
// the state (last grant included) carries over, the next segment is
// accepted, the old receipt still answers a replay and an operation
// query; that the database refuses an out-of-order segment from outside
// the gate (SQLite: a receipt without its predecessor; PostgreSQL, schema
// 7: a fence-row update that skips, with a negative control); and that
// skipping the guard marker where no table is protected never lets an
// ungated write into a table protected later.
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func testUpgradeToOneStatementAccept(t *testing.T, b backend) {
	iss := gatetest.NewIssuer("main")
	clock := fakeclock.New(iss.Now.Add(time.Second))
	g, err := sqlgate.New(sqlgate.Config{Dialect: b.dialect, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, db := context.Background(), b.open(t)
	if err := g.MigrateUpTo(ctx, db, 2); err != nil {
		t.Fatal(err)
	}
	// Segment 1 of op-a under fence 5 as a version-2 gate stored it.
	const r = "up/three"
	m1 := iss.Mutation(wr(r, 5, "op-a"), 1, "p1")
	g1, err := grant.ParseGrant(m1.Grant)
	if err != nil {
		t.Fatal(err)
	}
	old := gate.Receipt{Resource: r, FenceToken: 5, OperationRoot: m1.OperationRoot(), OperationID: "op-a", SegmentSeq: 1,
		PayloadDigest: m1.PayloadDigest, GrantDigest: g1.Digest(), AcceptedAt: clock.Now().UTC().Truncate(time.Millisecond),
		Mode: gate.ModeEnforce, Outcome: gate.Accepted}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO fencegate_resources (resource, mode, highest_fence, root, last_seq) VALUES ($1, 'enforce', 5, $2, 1)`,
			[]any{r, old.OperationRoot.String()}},
		{`INSERT INTO fencegate_receipts (id, resource, fence, operation_root, operation_id, seq, payload_digest, grant_digest, accepted_at_ms, mode, outcome)
VALUES ($1, $2, 5, $3, 'op-a', 1, $4, $5, $6, 'enforce', 'ACCEPTED')`,
			[]any{old.ID(), r, old.OperationRoot.String(), old.PayloadDigest.String(), old.GrantDigest.String(), old.AcceptedAt.UnixMilli()}},
	} {
		if _, err := db.ExecContext(ctx, rebind(b, q.sql), q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	if err := g.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Schema 5 carries the last accepted grant (SQLite: the last receipt's;
	// PostgreSQL: copied into the resource row), which regression
	// detection at an equal fence compares against.
	if st, err := g.State(ctx, db, r); err != nil || st.GrantDigest != g1.Digest() || st.HighestFence != 5 || st.LastSegmentSeq != 1 {
		t.Fatalf("state after migrating: %+v, %v", st, err)
	}
	noop := func(context.Context, *sql.Tx) error { return nil }
	if _, err := g.Run(ctx, db, owner, iss.Mutation(wr(r, 5, "op-a"), 2, "p2"), noop); err != nil {
		t.Fatalf("next segment after upgrade: %v", err)
	}
	got, err := g.Run(ctx, db, owner, m1, noop)
	if !errors.Is(err, gate.ErrReplayed) || got.ID() != old.ID() {
		t.Fatalf("replay of the pre-upgrade segment: %v, receipt %s want %s", err, got.ID(), old.ID())
	}
	st, err := g.State(ctx, db, r)
	if err != nil || st.HighestFence != 5 || st.LastSegmentSeq != 2 || st.Root != old.OperationRoot {
		t.Fatalf("state after upgrade: %+v, %v", st, err)
	}
	a, err := g.QueryOperation(ctx, db, r, "op-a", 5)
	if err != nil || a.Verdict != gate.VerdictAccepted || len(a.Receipts) != 2 || a.Receipts[0].ID() != old.ID() {
		t.Fatalf("operation after upgrade: %+v, %v", a, err)
	}
	if b.dialect == sqlgate.Postgres {
		testFenceStateInOrder(t, db, r)
		return
	}
	// SQLite refuses a receipt whose previous segment is missing (the
	// operation query relies on it), even from outside the gate.
	d := make([]byte, 32)
	for _, row := range []struct {
		fence, seq int
		op         string
	}{{5, 4, "op-a"}, {6, 2, "op-a"}, {5, 3, "op-b"}} {
		if _, err := db.ExecContext(ctx, rebind(b, directReceipt), r, row.fence, row.seq, row.op, d); err == nil {
			t.Fatalf("receipt fence %d seq %d %s without its previous segment was stored", row.fence, row.seq, row.op)
		}
	}
	if _, err := db.ExecContext(ctx, rebind(b, directReceipt), r, 5, 3, "op-a", d); err != nil {
		t.Fatalf("the next segment must still be insertable: %v", err)
	}
}

// testFenceStateInOrder: PostgreSQL (schema 7) refuses, even from outside
// the gate, a fence-row update the gate never makes, a lower fence among
// them (schema 8 dropped migration 2's trigger for it), and admits the
// two it does; the row of r is at fence 5, segment 2. Negative control:
// with the schema-7 trigger dropped, the skipped segment is stored, and
// so is a lower fence: no other trigger refuses it.
func testFenceStateInOrder(t *testing.T, db *sql.DB, r string) {
	ctx := context.Background()
	update := func(set string) error {
		_, err := db.ExecContext(ctx, `UPDATE fencegate_resources SET `+set+` WHERE resource = $1`, r)
		return err
	}
	const refusal = "the fence state moves only to"
	for _, set := range []string{
		"last_seq = 4",                            // a skipped segment
		"last_seq = 2",                            // the same segment again
		"highest_fence = 6, last_seq = 2",         // a higher fence not at segment 1
		"root = sha256('x'::bytea), last_seq = 3", // the next segment under another root
		"highest_fence = 4, last_seq = 1",         // a lower fence
	} {
		if err := update(set); err == nil || !strings.Contains(err.Error(), refusal) {
			t.Fatalf("SET %s: %v, want the database's refusal", set, err)
		}
	}
	for _, set := range []string{"last_seq = 3", "highest_fence = 8, last_seq = 1", "paused = 1, mode = mode"} {
		if err := update(set); err != nil {
			t.Fatalf("SET %s (what the gate does) refused: %v", set, err)
		}
	}
	if _, err := db.ExecContext(ctx, `DROP TRIGGER fencegate_fence_state_in_order ON fencegate_resources`); err != nil {
		t.Fatal(err)
	}
	if err := update("last_seq = 4"); err != nil {
		t.Fatalf("negative control: without the trigger the skip should be stored: %v", err)
	}
	if err := update("highest_fence = 4"); err != nil {
		t.Fatalf("negative control: without the trigger a lower fence should be stored: %v", err)
	}
}

// directReceipt inserts a receipt from outside the gate (schema 5): the
// database's own triggers are all that stand in its way.
const directReceipt = `INSERT INTO fencegate_receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
VALUES ($1, $2, $3, $4, $5, $5, $5, 0, 'enforce')`

// rebind turns $N placeholders into SQLite's ?N.
func rebind(b backend, q string) string {
	if b.dialect != sqlgate.SQLite {
		return q
	}
	out := []byte(q)
	for i := range out {
		if out[i] == '$' {
			out[i] = '?'
		}
	}
	return string(out)
}

// testGuardAfterUnguardedAccepts: accepts made while no table is protected
// skip the marker and count nothing; once a table is protected, the next
// accept marks again (its write is counted) and a direct write fails.
func testGuardAfterUnguardedAccepts(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "probe/one"
	for seq := uint64(1); seq <= 2; seq++ {
		m := e.iss.Mutation(wr(r, 5, "op-a"), seq, "p")
		if _, err := e.apply(owner, m, "p"); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := e.g.Coverage(e.ctx, e.db); err != nil || c.Gated != 0 || c.Ungated != 0 {
		t.Fatalf("coverage with nothing protected: %+v, %v", c, err)
	}
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	m := e.iss.Mutation(wr(r, 5, "op-a"), 3, "p")
	if _, err := e.apply(owner, m, "p"); err != nil {
		t.Fatalf("accept after Protect: %v", err)
	}
	// The same through Apply in the caller's transaction.
	tx, err := e.db.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	m4 := e.iss.Mutation(wr(r, 5, "op-a"), 4, "p")
	if _, err := e.g.Apply(e.ctx, tx, owner, m4, write(m4, "p")); err != nil {
		tx.Rollback()
		t.Fatalf("Apply after Protect: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if c, err := e.g.Coverage(e.ctx, e.db); err != nil || c.Gated != 2 || c.Ungated != 0 {
		t.Fatalf("coverage after Protect: %+v, %v", c, err)
	}
	if _, err := e.db.ExecContext(e.ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ('x', 1, 1, 'direct')`); err == nil {
		t.Fatal("direct write to a protected table succeeded")
	}
}

// TestSQLiteUpgradeRefusesUnderivableState: SQLite's schema 5 derives the
// fence state from the last receipt, so a database whose stored state is
// not its last receipt's (written outside the gate) must not migrate: the
// migration fails naming why, and the database stays at version 4 with
// its stored highest fence intact.
func TestSQLiteUpgradeRefusesUnderivableState(t *testing.T) {
	iss := gatetest.NewIssuer("main")
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: iss.Verifier}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, db := context.Background(), sqliteBackend.open(t)
	if err := g.MigrateUpTo(ctx, db, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO fencegate_resources (resource, mode, highest_fence) VALUES ('up/raised', 'enforce', 9)`); err != nil {
		t.Fatal(err)
	}
	err = g.Migrate(ctx, db)
	if err == nil || !strings.Contains(err.Error(), "resources_whose_fence_state_is_not_their_last_receipt") {
		t.Fatalf("migrate: %v", err)
	}
	var version, highest int
	db.QueryRowContext(ctx, `SELECT max(version) FROM fencegate_schema_migrations`).Scan(&version)
	db.QueryRowContext(ctx, `SELECT highest_fence FROM fencegate_resources WHERE resource = 'up/raised'`).Scan(&highest)
	if version != 4 || highest != 9 {
		t.Fatalf("after the refused migration: version %d, highest_fence %d", version, highest)
	}
}

// testUpgrade proves a database at schema version 1 upgrades in place,
// and that the database then refuses, even from outside the gate, a lower
// highest fence (PostgreSQL: an UPDATE of the row; SQLite, whose fence
// state is the last receipt: a receipt that does not follow it) and any
// change to a receipt.
func testUpgrade(t *testing.T, b backend) {
	iss := gatetest.NewIssuer("main")
	g, err := sqlgate.New(sqlgate.Config{Dialect: b.dialect, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: fakeclock.New(iss.Now)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, db := context.Background(), b.open(t)
	if err := g.MigrateUpTo(ctx, db, 1); err != nil {
		t.Fatal(err)
	}
	root := grant.OperationRoot("up/one", "op-9")
	for _, q := range []string{
		`INSERT INTO fencegate_resources (resource, mode, highest_fence, root, last_seq) VALUES ('up/one', 'enforce', 9, $1, 1)`,
		`INSERT INTO fencegate_receipts (id, resource, fence, operation_root, operation_id, seq, payload_digest, grant_digest, accepted_at_ms, mode, outcome)
VALUES ('x', 'up/one', 9, $1, 'op-9', 1, $1, $1, 0, 'enforce', 'ACCEPTED')`,
	} {
		if _, err := db.ExecContext(ctx, rebind(b, q), root.String()); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var versions int
	db.QueryRowContext(ctx, `SELECT count(*) FROM fencegate_schema_migrations`).Scan(&versions)
	if st := e2state(t, g, db, "up/one"); versions != sqlgate.SchemaVersion() || st.HighestFence != 9 || st.LastSegmentSeq != 1 || st.Root != root {
		t.Fatalf("after upgrade: %d versions, state %+v", versions, st)
	}
	lower, raise := `UPDATE fencegate_resources SET highest_fence = 3 WHERE resource = 'up/one'`, `UPDATE fencegate_resources SET highest_fence = 10 WHERE resource = 'up/one'`
	var args []any
	if b.dialect == sqlgate.SQLite {
		lower, raise, args = rebind(b, directReceipt), rebind(b, directReceipt), []any{"up/one", 3, 1, "op-3", root[:]}
	}
	if _, err := db.ExecContext(ctx, lower, args...); err == nil {
		t.Fatal("highest fence lowered directly")
	}
	if b.dialect == sqlgate.SQLite {
		args = []any{"up/one", 10, 1, "op-10", root[:]}
	}
	if _, err := db.ExecContext(ctx, raise, args...); err != nil {
		t.Fatalf("raising must work: %v", err)
	}
	if st := e2state(t, g, db, "up/one"); st.HighestFence != 10 {
		t.Fatalf("after raising: %+v", st)
	}
	m := iss.Mutation(wr("up/two", 5, "op-a"), 1, "p")
	if _, err := g.Run(ctx, db, owner, m, func(context.Context, *sql.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM fencegate_receipts`, `UPDATE fencegate_receipts SET payload_digest = operation_root`} {
		if _, err := db.ExecContext(ctx, q); err == nil {
			t.Fatalf("%s succeeded", q)
		}
	}
}

func e2state(t *testing.T, g *sqlgate.Gate, db *sql.DB, resource string) gate.FenceState {
	t.Helper()
	st, err := g.State(context.Background(), db, resource)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPostgresOrderTriggerUpgrade: a database at schema 9, with the fence
// row moved by a gate under migration 7's WHEN-clause trigger, upgrades to
// schema 10's PL/pgSQL trigger fired after the update (no WHEN clause
// left to rebuild per statement, no BEFORE row lock): the state carries
// over, the gate's next writes (the cached one-statement store and the
// read-and-decide path) are accepted, and the database refuses exactly
// what schema 7 refused, from outside the gate, with the same negative
// control (testFenceStateInOrder).
func TestPostgresOrderTriggerUpgrade(t *testing.T) {
	iss := gatetest.NewIssuer("main")
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.Postgres, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: fakeclock.New(iss.Now.Add(time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, db := context.Background(), postgresBackend.open(t)
	if err := g.MigrateUpTo(ctx, db, 9); err != nil {
		t.Fatal(err)
	}
	trigger := func() (when bool, before bool) {
		t.Helper()
		if err := db.QueryRowContext(ctx, `SELECT tgqual IS NOT NULL, tgtype & 2 <> 0 FROM pg_trigger WHERE tgname = 'fencegate_fence_state_in_order'`).Scan(&when, &before); err != nil {
			t.Fatal(err)
		}
		return when, before
	}
	if when, before := trigger(); !when || !before {
		t.Fatalf("schema 9's order trigger: WHEN %v, BEFORE %v", when, before)
	}
	const r = "up/order"
	noop := func(context.Context, *sql.Tx) error { return nil }
	for seq := uint64(1); seq <= 2; seq++ {
		if _, err := g.Run(ctx, db, owner, iss.Mutation(wr(r, 5, "op-a"), seq, "p"), noop); err != nil {
			t.Fatalf("segment %d at schema 9: %v", seq, err)
		}
	}
	if err := g.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if when, before := trigger(); when || before {
		t.Fatalf("schema 10's order trigger: WHEN %v, BEFORE %v", when, before)
	}
	if st := e2state(t, g, db, r); st.HighestFence != 5 || st.LastSegmentSeq != 2 {
		t.Fatalf("state after the upgrade: %+v", st)
	}
	cold, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.Postgres, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: fakeclock.New(iss.Now.Add(time.Second)), CachedStatesMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := cold.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, db, owner, iss.Mutation(wr(r, 5, "op-a"), 3, "p"), noop); err != nil {
		t.Fatalf("segment 3 from the warm gate: %v", err)
	}
	if _, err := cold.Run(ctx, db, owner, iss.Mutation(wr(r, 5, "op-a"), 4, "p"), noop); err != nil {
		t.Fatalf("segment 4 from a gate that reads first: %v", err)
	}
	if _, err := g.Run(ctx, db, owner, iss.Mutation(wr(r, 7, "op-b"), 1, "p"), noop); err != nil {
		t.Fatalf("fence 7 from the warm gate after another gate's write: %v", err)
	}
	// testFenceStateInOrder wants the row at fence 5, segment 2.
	const r2 = "up/order2"
	for seq := uint64(1); seq <= 2; seq++ {
		if _, err := g.Run(ctx, db, owner, iss.Mutation(wr(r2, 5, "op-a"), seq, "p"), noop); err != nil {
			t.Fatalf("%s segment %d: %v", r2, seq, err)
		}
	}
	testFenceStateInOrder(t, db, r2)
}
