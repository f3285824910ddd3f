// This file continues the behavioural suite: failing business functions,
// the coverage guard, shadow and enforce modes, operation-ID verdicts and
// the linearizable status querier.
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func testBusinessFailure(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "biz/one"
	boom := errors.New("boom")
	halfway := func(m *gate.Mutation) sqlgate.BusinessFunc {
		return func(ctx context.Context, tx *sql.Tx) error {
			if err := write(m, "half")(ctx, tx); err != nil {
				return err
			}
			return boom
		}
	}
	m := e.iss.Mutation(wr(r, 5, "op-a"), 1, "p")
	if _, err := e.g.Run(e.ctx, e.db, owner, m, halfway(m)); !errors.Is(err, boom) || !errors.Is(err, sqlgate.ErrBusiness) {
		t.Fatalf("got %v", err)
	}
	// In the caller's own transaction, which it then commits: the savepoint
	// must have removed the half-done write and written no receipt.
	tx, err := e.db.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Apply(e.ctx, tx, owner, m, halfway(m)); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM ledger`); n != 0 {
		t.Fatalf("ledger has %d rows", n)
	}
	if n := e.count(`SELECT count(*) FROM fencegate_receipts`); n != 0 {
		t.Fatalf("receipts: %d", n)
	}
	if st := e.state(r); st.HighestFence != 0 || st.LastSegmentSeq != 0 {
		t.Fatalf("fence moved: %+v", st)
	}
	if _, err := e.apply(owner, m, "p"); err != nil {
		t.Fatalf("the same mutation must still be acceptable: %v", err)
	}
}

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

func testModes(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "mode/one"
	if err := e.g.SetMode(e.ctx, e.db, r, gate.ModeShadow, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeShadow, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	stale := e.iss.WithStatus(e.iss.Mutation(wr(r, 4, "op-old"), 1, "p"), grant.StateExpired)
	rc, err := e.apply(owner, stale, "stale")
	if err != nil || rc.Outcome != gate.StaleOwner || rc.Mode != gate.ModeShadow {
		t.Fatalf("shadow must let it through and say STALE_OWNER: %+v %v", rc, err)
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE payload = 'stale'`); n != 1 {
		t.Fatal("shadow: business change must proceed")
	}
	if n := e.count(`SELECT count(*) FROM fencegate_receipts WHERE resource = $1`, r); n != 1 {
		t.Fatalf("shadow rejection stored a receipt: %d receipts", n)
	}
	logs, err := e.g.Records(e.ctx, e.db, "shadow_log", r)
	if err != nil || len(logs) != 1 || logs[0].Kind != string(gate.StaleOwner) {
		t.Fatalf("shadow log %+v %v", logs, err)
	}
	if st := e.state(r); st.HighestFence != 5 {
		t.Fatalf("shadow rejection moved the fence: %+v", st)
	}
	if c, err := e.g.Coverage(e.ctx, e.db); err != nil || c.Gated != 1 || c.Ungated != 1 {
		t.Fatalf("the shadow-rejected write must count as ungated: %+v %v", c, err)
	}
	if err := e.g.SetMode(e.ctx, e.db, r, gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.apply(owner, stale, "stale"); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("enforce: %v", err)
	}
	if err := e.g.SetMode(e.ctx, e.db, r, gate.ModeShadow, "ops"); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("enforce → shadow: %v", err)
	}
	if err := e.g.SetMode(e.ctx, e.db, r, "off", "ops"); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("enforce → off: %v", err)
	}
}

// testVerdicts proves the three MUTATION_UNKNOWN answers.
func testVerdicts(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "rec/one"
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	ask := func(op string, fence uint64) gate.Answer {
		a, err := e.g.QueryOperation(e.ctx, e.db, r, op, fence)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := ask("op-a", 5); a.Verdict != gate.VerdictAccepted || len(a.Receipts) != 1 || a.Receipts[0].FenceToken != 5 {
		t.Fatalf("accepted: %+v", a)
	}
	// op-lost was sent under fence 6 and its outcome is unknown: nothing
	// stops a delayed copy from landing yet.
	if a := ask("op-lost", 6); a.Verdict != gate.VerdictUndetermined {
		t.Fatalf("undetermined: %+v", a)
	}
	// A newer owner writes under fence 7: fence 6 can never be accepted now.
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 7, "op-new"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	if a := ask("op-lost", 6); a.Verdict != gate.VerdictProvenAbsent || a.HighestFence != 7 {
		t.Fatalf("proven absent: %+v", a)
	}
	// And indeed the delayed copy is rejected.
	late := e.iss.WithStatus(e.iss.Mutation(wr(r, 6, "op-lost"), 1, "p"), grant.StateExpired)
	if _, err := e.apply(owner, late, "late"); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("late copy: %v", err)
	}
	if a := ask("op-lost", 6); a.Verdict != gate.VerdictProvenAbsent {
		t.Fatalf("still proven absent: %+v", a)
	}
}

// fakeRegistry answers status queries: HELD iff the grant's fence is the
// current one.
type fakeRegistry struct {
	current func() uint64
	fences  map[grant.Digest]uint64
	err     error
}

func (f *fakeRegistry) QueryStatus(ctx context.Context, g *grant.Grant) (grant.State, uint64, error) {
	d := g.Digest()
	if f.err != nil {
		return "", 0, f.err
	}
	if f.fences[d] == f.current() {
		return grant.StateHeld, gatetest.Epoch, nil
	}
	return grant.StateExpired, gatetest.Epoch, nil
}

func testQuerier(t *testing.T, b backend) {
	cur := uint64(5)
	reg := &fakeRegistry{current: func() uint64 { return cur }, fences: map[grant.Digest]uint64{}}
	e := newEnv(t, b, reg)
	const r = "q/one"
	mut := func(fence uint64, op string) *gate.Mutation {
		m := gatetest.WithoutStatus(e.iss.Mutation(wr(r, fence, op), 1, "p"))
		g, _ := grant.ParseGrant(m.Grant)
		reg.fences[g.Digest()] = fence
		return m
	}
	if _, err := e.apply(owner, mut(5, "op-a"), "p"); err != nil {
		t.Fatal(err)
	}
	cur = 6
	if _, err := e.apply(owner, mut(4, "op-old"), "p"); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("old fence: %v", err)
	}
	reg.err = errors.New("registry unreachable")
	if _, err := e.apply(owner, mut(6, "op-b"), "p"); !errors.Is(err, gate.ErrNotHeld) {
		t.Fatalf("query error must never accept: %v", err)
	}
	reg.err = nil
	if _, err := e.apply(owner, mut(6, "op-b"), "p"); err != nil {
		t.Fatal(err)
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

func e2state(t *testing.T, g *sqlgate.Gate, db *sql.DB, resource string) gate.State {
	t.Helper()
	st, err := g.State(context.Background(), db, resource)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
