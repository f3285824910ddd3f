package sim

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/memgate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
)

// memAdapter is the fast mode: gate/memgate.
type memAdapter struct{ g *memgate.Gate }

func (a memAdapter) apply(m *gate.Mutation, caller string, business func()) (gate.Receipt, error) {
	return a.g.Apply(context.Background(), caller, m, func() error { business(); return nil })
}

func (a memAdapter) applyJob(hop string, j *gate.Job, business func()) (gate.Receipt, error) {
	return a.g.ApplyJob(context.Background(), hop, j, nil, func() error { business(); return nil })
}

func (a memAdapter) state(resource string) gate.FenceState { return a.g.State(resource) }

func (a memAdapter) query(resource, op string, fence uint64) gate.Answer {
	return a.g.QueryOperation(resource, op, fence)
}

func (a memAdapter) resume(resource string, floor uint64) error {
	return a.g.Resume(resource, floor, "operator", "simulated: registry floor raised")
}

// sqlAdapter is the SQL mode: gate/sqlgate on an in-memory SQLite
// database, one per goroutine that runs rounds (each round has resources
// of its own name, so rounds never see each other's state).
type sqlAdapter struct {
	env *sqlEnv
}

// sqlEnv is one goroutine's database and gate. The gate's clock and
// status querier point at whichever round is running.
type sqlEnv struct {
	db    *sql.DB
	g     *sqlgate.Gate
	pg    *pgEnv     // the PostgreSQL mode's database instead (db and g nil)
	world *world     // the round running on it (nil before the first)
	clock partyClock // that round's gate clock
	// nowFn, when set, is the gate clock of the lock-set or semaphore
	// round running on it instead (setfaults.go).
	nowFn func() time.Time
}

// gateNow is the running round's gate clock now.
func (e *sqlEnv) gateNow() time.Time {
	switch {
	case e.nowFn != nil:
		return e.nowFn()
	case e.world == nil:
		return epochBase // migrating, before any round
	}
	return e.clock.at(e.world.now)
}

// newSQLEnv opens an in-memory SQLite database and migrates a gate on it
// for rounds of cfg under policy.
func newSQLEnv(policy gate.Policy, cfg *Config) (*sqlEnv, error) {
	db, err := sqlgate.OpenSQLite(":memory:", "OFF")
	if err != nil {
		return nil, err
	}
	e := &sqlEnv{db: db}
	gc := sqlgate.Config{Dialect: sqlgate.SQLite, Policy: policy, Clock: envClock{e}, DefaultMode: cfg.mode()}
	if cfg.StatusQuery {
		gc.Querier = gate.QuerierFunc(e.queryStatus)
	}
	g, err := sqlgate.New(gc)
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := g.Migrate(context.Background(), db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sim: sql mode: %w", err)
	}
	e.g = g
	return e, nil
}

func (e *sqlEnv) close() {
	if e.pg != nil {
		e.pg.close()
		return
	}
	e.db.Close()
}

// envClock is the gate's clock: the running round's gate clock.
type envClock struct{ e *sqlEnv }

func (c envClock) Now() time.Time { return c.e.gateNow() }

func (c envClock) After(time.Duration) <-chan time.Time {
	panic("sim: the gate set a timer") // sqlgate never waits on its clock
}

func (e *sqlEnv) queryStatus(ctx context.Context, g *grant.Grant) (grant.State, uint64, error) {
	return e.world.queryStatus(ctx, g)
}

func (a sqlAdapter) apply(m *gate.Mutation, caller string, business func()) (gate.Receipt, error) {
	return a.env.g.Run(context.Background(), a.env.db, caller, m, func(context.Context, *sql.Tx) error { business(); return nil })
}

func (a sqlAdapter) applyJob(hop string, j *gate.Job, business func()) (gate.Receipt, error) {
	return a.env.g.RunJob(context.Background(), a.env.db, hop, j, nil, func(context.Context, *sql.Tx) error { business(); return nil })
}

func (a sqlAdapter) state(resource string) gate.FenceState {
	st, err := a.env.g.State(context.Background(), a.env.db, resource)
	if err != nil {
		panic("sim: sql state: " + err.Error())
	}
	return st
}

func (a sqlAdapter) query(resource, op string, fence uint64) gate.Answer {
	ans, err := a.env.g.QueryOperation(context.Background(), a.env.db, resource, op, fence)
	if err != nil {
		panic("sim: sql query: " + err.Error())
	}
	return ans
}

func (a sqlAdapter) resume(resource string, floor uint64) error {
	return a.env.g.Resume(context.Background(), a.env.db, resource, floor, "operator", "simulated: registry floor raised")
}
