package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
)

// BusinessFunc makes the protected change. It runs in the caller's
// transaction only when the gate lets the mutation through; if it returns
// an error, everything it wrote is rolled back and the gate writes nothing.
type BusinessFunc func(ctx context.Context, tx *sql.Tx) error

// ErrBusiness wraps the error of a business function that failed; the
// transaction is left as it was before Apply (no receipt, no fence change).
var ErrBusiness = errors.New("sqlgate: business change failed")

// Apply is applyFencedMutation in the caller's transaction tx, which must
// come from the database the gate was migrated on. caller is the identity
// the transport authenticated. It returns:
//
//   - ACCEPTED: (new receipt, nil); fn ran, and its writes, the new fence
//     state and the receipt are in tx — commit it.
//   - REPLAYED: (original receipt, error matching gate.ErrReplayed); fn did
//     not run; gate.IsSuccess(err) is true.
//   - shadow mode, not accepted: (an unstored receipt whose Outcome is the
//     would-be rejection, nil); fn ran; the decision is in the shadow log.
//   - a rejection: (zero, *gate.Rejection); fn did not run. If
//     Rejection.Recorded, tx holds the quarantine row, alarm row or pause
//     that the decision recorded: commit tx to keep them (Run does).
//   - fn failed: (zero, error matching ErrBusiness); a savepoint undid
//     fn's writes; nothing of the gate's was written.
//   - anything else: a database error; roll tx back.
//
// On SQLite tx must hold the write lock from BEGIN (OpenSQLite's
// _txlock=immediate); on PostgreSQL use READ COMMITTED. Concurrent applies
// on one resource serialize on its fence row.
func (g *Gate) Apply(ctx context.Context, tx *sql.Tx, caller string, m *gate.Mutation, fn BusinessFunc) (gate.Receipt, error) {
	return g.applyIn(ctx, sqlTxn{g, tx}, caller, m, onTx(fn, tx), false)
}

// Run is Apply in a transaction of its own: it begins one on db, applies,
// and commits when the write stands or the decision recorded something
// (quarantine, alarm, pause, shadow log); otherwise it rolls back. Owning
// the transaction, it needs no savepoint: a failed fn rolls everything back.
//
// On PostgreSQL through pgx's database/sql driver, Run pins a connection
// and pipelines the gate's statements on the pgx connection under it
// (sqlpgx.go).
func (g *Gate) Run(ctx context.Context, db *sql.DB, caller string, m *gate.Mutation, fn BusinessFunc) (gate.Receipt, error) {
	return g.inOwnTx(ctx, db, true, "query receipts by operation ID", func(t txn, tx *sql.Tx) (gate.Receipt, error) {
		return g.applyIn(ctx, t, caller, m, onTx(fn, tx), true)
	})
}

// inOwnTx is Run's and RunJob's transaction: it begins one on db, runs
// apply in it, and commits when keepTx says the outcome stands, else
// rolls back; the rollback is deferred too, so a panic in apply ends the
// transaction and frees its connection. With pipeline, on pgx's
// database/sql driver, the transaction runs on a pinned connection and
// apply's txn pipelines on the pgx connection under it (sqlpgx.go).
// unknown says how to learn the outcome of a commit that failed.
func (g *Gate) inOwnTx(ctx context.Context, db *sql.DB, pipeline bool, unknown string, apply func(t txn, tx *sql.Tx) (gate.Receipt, error)) (gate.Receipt, error) {
	begin, pin := db.BeginTx, (*sql.Conn)(nil)
	if pipeline && g.stmt.speculateStore != "" && pgxDriver(db) {
		c, err := db.Conn(ctx)
		if err != nil {
			return gate.Receipt{}, fmt.Errorf("sqlgate: begin: %w", err)
		}
		defer c.Close() // after the deferred rollback below: Close waits for an open transaction
		begin, pin = c.BeginTx, c
	}
	tx, err := begin(ctx, nil)
	if err != nil {
		return gate.Receipt{}, fmt.Errorf("sqlgate: begin: %w", err)
	}
	defer tx.Rollback() // after a commit, a no-op
	var t txn = sqlTxn{g, tx}
	if pin != nil {
		t = sqlPgxTxn{sqlTxn: sqlTxn{g, tx}, conn: pin}
	}
	r, err := apply(t, tx)
	if !keepTx(err) {
		return r, err
	}
	if cerr := tx.Commit(); cerr != nil {
		return gate.Receipt{}, fmt.Errorf("sqlgate: commit (outcome unknown: %s): %w", unknown, cerr)
	}
	return r, err
}

// keepTx reports whether a transaction the gate owns is committed after
// an apply that returned err: when the write stands, or the decision
// recorded something (quarantine, alarm, pause, shadow log).
func keepTx(err error) bool {
	var rej *gate.Rejection
	return err == nil || errors.As(err, &rej) && rej.Recorded && rej.Outcome != gate.Replayed
}

// onTx binds a database/sql business function to its transaction.
func onTx(fn BusinessFunc, tx *sql.Tx) func(context.Context) error {
	return func(ctx context.Context) error { return fn(ctx, tx) }
}

func (g *Gate) applyIn(ctx context.Context, tx txn, caller string, m *gate.Mutation, fn func(context.Context) error, ownTx bool) (gate.Receipt, error) {
	d, err := g.apply(ctx, tx, caller, m, fn, ownTx)
	if errors.Is(err, ErrBusiness) || gate.OutcomeOf(err) == "" {
		return gate.Receipt{}, err
	}
	g.counters.Add(d.Outcome)
	return adapt.Result(d, m)
}

func (g *Gate) apply(ctx context.Context, tx txn, caller string, m *gate.Mutation, fn func(context.Context) error, ownTx bool) (_ gate.Decision, err error) {
	v, err := g.dec.Policy.Authenticate(m, caller)
	if err != nil {
		return gate.Decision{Outcome: gate.OutcomeOf(err), Err: err}, err
	}
	var st gate.FenceState
	var prior *gate.Receipt
	var guarded bool
	now := g.clock.Now()
	d, st, stored, err := g.fastAccept(ctx, tx, v, now, ownTx)
	if err != nil {
		return gate.Decision{}, err
	}
	if !stored {
		if g.canSpeculate(v, now, ownTx) {
			st, prior, guarded, stored, err = g.speculateLookup(ctx, tx, v, now)
		} else {
			st, prior, guarded, err = g.lockLookup(ctx, tx, m)
		}
		if err != nil {
			return gate.Decision{}, err
		}
		if !stored {
			now = g.clock.Now() // the lock may have been waited for
		}
		d = g.dec.DecideLocked(ctx, v, st, prior, now)
	}
	if stored {
		if d, err = g.keepSpeculation(ctx, v, st, prior, now, d); err != nil {
			return d, err
		}
	}
	defer g.remember(d, st, guarded, &err)
	if d.Store {
		g.dec.CheckStore(st, d.State) // the accept's fence state, or the pause
	}
	if !d.Proceed {
		if err := g.record(ctx, tx, d, v, prior); err != nil {
			return d, err
		}
		return d, d.Err
	}
	b := business{g: g, tx: tx, d: d, v: v, prior: prior, ownTx: ownTx, guarded: guarded, stored: stored}
	if err := b.run(ctx, fn); err != nil {
		return d, err
	}
	return d, d.Err
}

// remember puts in the cache the state an apply leaves stored if it
// commits: an accept's, or the state it decided on when it stored
// nothing; after an error or a stored pause, it forgets the resource.
// Whether the transaction then commits does not matter: the cache is
// only ever compared with the database (fast.go).
func (g *Gate) remember(d gate.Decision, st gate.FenceState, guarded bool, err *error) {
	switch {
	case g.cache == nil:
	case d.Outcome == gate.Accepted && *err == nil:
		g.cache.put(d.State, guarded)
	case !d.Store && (*err == nil || gate.OutcomeOf(*err) != ""):
		g.cache.put(st, guarded)
	default:
		g.cache.forget(st.Resource)
	}
}
