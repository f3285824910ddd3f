// This file proves that PostgreSQL's speculative accept (Run and RunPgx
// locking and storing in one statement) never decides anything
// gate.Decide would not: a status proof that goes stale while the
// statement waits for the row lock is rejected with nothing written, and
// a statement loosened on purpose stores an accept that Decide refuses,
// which is rolled back. Each test runs through database/sql on pgx's
// driver (the pipelined pair), through database/sql on a driver that is
// not pgx's (the one-statement CTE), and through RunPgx.
package sqlgate_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// stepClock returns its times in order, then the last one forever.
type stepClock struct {
	mu sync.Mutex
	ts []time.Time
}

// set replaces the times to come.
func (c *stepClock) set(ts ...time.Time) {
	c.mu.Lock()
	c.ts = ts
	c.mu.Unlock()
}

func (c *stepClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) } // the gate sets no timers

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.ts[0]
	if len(c.ts) > 1 {
		c.ts = c.ts[1:]
	}
	return t
}

// specEnv is a PostgreSQL gate on dialect d with clock c and a ledger,
// applying through database/sql's Run (on pgx's driver, or with via
// "database-sql-cte" on one that hides it) or, with via "pgx", RunPgx.
func specEnv(t *testing.T, d *sqlgate.Dialect, c clock.Clock, via string) (*specE, *gatetest.Issuer) {
	iss := gatetest.NewIssuer("main")
	g, err := sqlgate.New(sqlgate.Config{Dialect: d, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off")
	driverName := "pgx"
	if via == "database-sql-cte" {
		driverName = hiddenPgxDriver
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &specE{env: &env{t: t, ctx: context.Background(), db: db, g: g, iss: iss}}
	if err := g.Migrate(e.ctx, e.db); err != nil {
		t.Fatal(err)
	}
	e.exec(fmt.Sprintf(ledgerDDL, "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"))
	if via == "pgx" {
		if e.conn, err = pgx.Connect(e.ctx, dsn); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.conn.Close(context.Background()) })
	}
	return e, iss
}

// specE applies through RunPgx when it has a pgx connection.
type specE struct {
	*env
	conn *pgx.Conn
}

func (e *specE) apply(caller string, m *gate.Mutation, payload string) (gate.Receipt, error) {
	if e.conn == nil {
		return e.env.apply(caller, m, payload)
	}
	return e.g.RunPgx(e.ctx, e.conn, caller, m, func(ctx context.Context, q sqlgate.PgxQuerier) error {
		_, err := q.Exec(ctx, `INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, $2, $3, $4)`,
			m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), payload)
		return err
	})
}

var vias = []string{"database-sql", "database-sql-cte", "pgx"}

// hiddenPgxDriver is pgx's database/sql driver behind a wrapper, as a
// tracing driver would put it: its connections offer every database/sql
// interface but not the pgx connection under them, and Run takes the
// one-statement CTE on it, as it does on any driver that is not pgx's.
const hiddenPgxDriver = "pgx-hidden"

func init() { sql.Register(hiddenPgxDriver, hiddenDriver{stdlib.GetDefaultDriver()}) }

type hiddenDriver struct{ driver.Driver }

// driverConn is what pgx's driver connection offers database/sql, less
// its Conn method.
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.NamedValueChecker
}

type hiddenConn struct{ driverConn }

func (d hiddenDriver) Open(name string) (driver.Conn, error) {
	c, err := d.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return hiddenConn{c.(driverConn)}, nil
}

// TestRunPipelinesOnlyOnPgxDriver: Run's pipelined path is taken on pgx's
// driver and not on the wrapped one (the vias above rely on it). With the
// pipelined store statement alone loosened (it forgets the minimum policy
// generation), Run on pgx's driver stores what Decide refuses and rolls
// it back, which only that statement can have done; on the wrapped
// driver the CTE, untouched, stores nothing and Decide answers
// POLICY_STALE.
func TestRunPipelinesOnlyOnPgxDriver(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	for name, want := range map[string]bool{"pgx": true, hiddenPgxDriver: false} {
		db, err := sql.Open(name, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if got := sqlgate.PipelinesOn(db); got != want {
			t.Errorf("driver %s: pipelines %v, want %v", name, got, want)
		}
	}
	for _, via := range []string{"database-sql", "database-sql-cte"} {
		t.Run(via, func(t *testing.T) {
			const r = "spec/which"
			d := sqlgate.BreakSpeculateStore(sqlgate.Postgres, "AND s.min_policy_generation <= $10", "AND $10 >= 0")
			e, iss := policyRaised(t, d, via, r)
			_, err := e.apply(owner, iss.Mutation(wr(r, 6, "op-b"), 1, "p"), "p")
			pipelined := strings.Contains(fmt.Sprint(err), "disagrees with the decision POLICY_STALE")
			if pipelined != (via == "database-sql") || !pipelined && !errors.Is(err, gate.ErrPolicyStale) {
				t.Fatalf("%s: %v", via, err)
			}
			nothingWritten(e.env, r, 5)
		})
	}
}

// nothingWritten fails unless resource r has no receipt, no ledger row
// and highestFence want.
func nothingWritten(e *env, r string, highest uint64) {
	e.t.Helper()
	if n := e.count(`SELECT count(*) FROM fencegate_receipts WHERE resource = $1 AND fence > $2`, r, int64(highest)); n != 0 {
		e.t.Fatalf("%d receipts above fence %d", n, highest)
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE resource = $1 AND fence > $2`, r, int64(highest)); n != 0 {
		e.t.Fatalf("%d ledger rows above fence %d", n, highest)
	}
	if st := e.state(r); st.HighestFence != highest {
		e.t.Fatalf("highestFence %d, want %d", st.HighestFence, highest)
	}
}

func TestPostgresSpeculationRechecksProofUnderLock(t *testing.T) {
	for _, via := range vias {
		t.Run(via, func(t *testing.T) { testRechecksProofUnderLock(t, via) })
	}
}

func testRechecksProofUnderLock(t *testing.T, via string) {
	iss0 := gatetest.NewIssuer("main")
	fresh, stale := iss0.Now.Add(time.Second), iss0.Now.Add(iss0.StatusValidFor+time.Second)
	clock := &stepClock{ts: []time.Time{fresh}}
	e, iss := specEnv(t, sqlgate.Postgres, clock, via)
	const r = "spec/stale"
	m := iss.Mutation(wr(r, 5, "op-a"), 1, "p")
	// The row exists, so the first statement can store; Migrate has
	// already read the clock.
	e.exec(`INSERT INTO fencegate_resources (resource, mode) VALUES ($1, 'enforce')`, r)
	// The first reading (before the statement) finds the proof fresh,
	// every later one (with the row locked) finds it expired.
	clock.set(fresh, stale)
	if _, err := e.apply(owner, m, "p"); !errors.Is(err, gate.ErrProofExpired) {
		t.Fatalf("proof expired under the lock: %v", err)
	}
	nothingWritten(e.env, r, 0)
}

// policyRaised is a specEnv on dialect d where resource r holds one
// accept at fence 5 (segment 1 of op-a) and its minimum policy generation
// was then raised to 1000, above every grant's.
func policyRaised(t *testing.T, d *sqlgate.Dialect, via, r string) (*specE, *gatetest.Issuer) {
	t.Helper()
	iss0 := gatetest.NewIssuer("main")
	e, iss := specEnv(t, d, &stepClock{ts: []time.Time{iss0.Now.Add(time.Second)}}, via)
	if _, err := e.apply(owner, iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	if err := e.g.SetMinPolicyGeneration(e.ctx, e.db, r, 1000, "ops"); err != nil {
		t.Fatal(err)
	}
	return e, iss
}

func TestPostgresSpeculationLoosenedIsCaughtByDecide(t *testing.T) {
	for _, via := range vias {
		t.Run(via, func(t *testing.T) { testLoosenedIsCaughtByDecide(t, via) })
	}
}

func testLoosenedIsCaughtByDecide(t *testing.T, via string) {
	const r = "spec/policy"
	for _, loose := range []bool{false, true} {
		t.Run(map[bool]string{false: "statement", true: "loosened-statement"}[loose], func(t *testing.T) {
			d := sqlgate.Postgres
			if loose { // forget the minimum policy generation
				d = sqlgate.BreakSpeculation(d, "AND s.min_policy_generation <= $10", "AND $10 >= 0")
			}
			e, iss := policyRaised(t, d, via, r)
			for _, m := range []*gate.Mutation{iss.Mutation(wr(r, 6, "op-b"), 1, "p"), iss.Mutation(wr(r, 5, "op-a"), 2, "p")} {
				_, err := e.apply(owner, m, "p")
				switch {
				case !loose && !errors.Is(err, gate.ErrPolicyStale):
					t.Fatalf("fence %d segment %d below the minimum policy: %v", m.FenceToken, m.SegmentSeq, err)
				case loose && (gate.OutcomeOf(err) != "" || !strings.Contains(fmt.Sprint(err), "disagrees with the decision POLICY_STALE")):
					t.Fatalf("loosened statement, fence %d segment %d: %v", m.FenceToken, m.SegmentSeq, err)
				}
			}
			nothingWritten(e.env, r, 5)
			if n := e.count(`SELECT count(*) FROM fencegate_receipts WHERE resource = $1`, r); n != 1 {
				t.Fatalf("%d receipts, want the first accept's alone", n)
			}
			if n := e.count(`SELECT count(*) FROM ledger WHERE resource = $1`, r); n != 1 {
				t.Fatalf("%d ledger rows, want the first accept's alone", n)
			}
		})
	}
}
