// Package sqlgate runs the gate decision inside a SQL transaction on
// SQLite (modernc.org/sqlite, the embedded default) or PostgreSQL (pgx via
// database/sql): Apply verifies a mutation, locks the resource's fence
// row, decides with gate.Decide, and writes the business change, the new
// fence state and the receipt in one transaction — or nothing.
//
// # Use
//
//	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: v}})
//	err = g.Migrate(ctx, db)                       // create/upgrade tables, prepare statements
//	rcpt, err := g.Run(ctx, db, caller, m, func(ctx context.Context, tx *sql.Tx) error {
//		_, err := tx.ExecContext(ctx, "UPDATE invoices SET … WHERE …")
//		return err
//	})
//
// Run owns the transaction; Apply composes into the caller's. The
// business function must use the transaction it is given. On PostgreSQL,
// RunPgx is Run for pgx's own interface (pgx.go): the same decision with
// BEGIN sent along with the gate's first statement, so an accepted write
// takes as many round trips as a plain one-statement transaction.
//
// # Transactions and locking
//
// PostgreSQL: READ COMMITTED; the fence row is read with SELECT … FOR
// UPDATE, so applies on one resource serialize and applies on different
// resources proceed in parallel. Run, holding a status proof, locks the
// row and stores the accept in one statement where the locked state
// admits it, and keeps it only if gate.Decide agrees (speculate.go): one
// round trip fewer per accepted write. On pgx's database/sql driver Run
// sends those two statements as one pgx batch on the connection under
// its transaction (sqlpgx.go); on any other driver, as one CTE. SQLite: one writer at a time for the
// whole database; open it with OpenSQLite (WAL, BEGIN IMMEDIATE, busy
// timeout, a pool of one connection).
//
// # Tables
//
// All tables carry a configurable prefix (default "fencegate_"):
// resources (mode, pause and minimum policy generation per resource; on
// PostgreSQL also its fence state), receipts (one per accepted segment,
// keyed by (resource, fence, seq), digests as 32 bytes; each fence's
// first segment indexed by operation ID, no segment without its previous
// one, none that does not follow its resource's last; never updated or
// deleted; on PostgreSQL each also keeps the ID of the transaction that
// stored it, the coverage guard's mark), quarantine, alarms, shadow_log,
// operator_actions, protected (coverage guard registrations: mode, what
// names a row's resource, the ungated count), apply_marks (SQLite's guard
// marks, always empty between transactions), never_committed (SQLite,
// always empty) and schema_migrations. Migrate applies the numbered
// migrations.
//
// Where the fence state lives is the dialect's (see Dialect): on SQLite
// it is the resource's last receipt, read under the database's one write
// lock, so an accept writes the receipt and nothing else of the gate's;
// on PostgreSQL it is the resource row, locked and updated by each accept.
//
// # Receipts and MUTATION_UNKNOWN
//
// QueryOperation(resource, operationID, fence) answers whether an
// operation attempted under fence happened, from one consistent snapshot:
//
//   - ACCEPTED: receipts exist for the operation ID (all are returned);
//   - PROVEN_ABSENT: no receipt exists for the operation ID AND the
//     resource's highestFence is above fence. Receipts are written in the
//     same transaction as every acceptance and never deleted, so the
//     operation has not happened; highestFence never decreases and every
//     fence below it is rejected, so it never will under that grant;
//   - UNDETERMINED: no receipt, but highestFence ≤ fence: a delayed copy
//     could still be accepted. Write under a newer grant (raising
//     highestFence) or reconcile, then ask again.
//
// # Coverage guard
//
// ProtectResource installs a trigger on a business table, naming the
// column (or expression) that names a row's resource; Protect takes the
// column "resource". The database then admits an INSERT, UPDATE or
// DELETE of a row only when the gate accepted the row's own resource
// earlier in the same transaction (before and after, for an UPDATE), in
// enforce mode for a table in enforce mode; any other row fails
// (ErrUnguarded, FG020) in enforce mode and is counted in shadow mode.
// Coverage reports gate-accepted protected rows / all protected rows as
// a number. The mark of an accept is never a setting: on PostgreSQL it is
// the accept's receipt, which keeps the ID of the transaction that stored
// it (a guarded accept is stored before the business change); on SQLite
// a row of apply_marks naming the resource, between the accept and its
// receipt, which a deferred foreign key keeps from being committed. SQL
// that writes the gate's own tables by hand can forge it (on PostgreSQL,
// by recording an accept in the ledger), as the table's owner can drop
// the trigger; TRUNCATE is not guarded (docs/guarantees.md, "Coverage").
//
// # Modes and operator actions
//
// Resources and protected tables go shadow → enforce, never back
// (SetMode, Protect). SetMinPolicyGeneration raises a resource's minimum
// grant policy generation. Resume lifts a FENCE_REGRESSION pause once the
// operator states a registry fence floor above highestFence. Every
// operator action is recorded in operator_actions.
//
// # Metrics
//
// Counters returns per-outcome decision counts; gate/gatemetrics exports
// them to Prometheus.
package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/internal/adapter"
)

// PrefixDefault is the table prefix when Config.Prefix is empty.
const PrefixDefault = "fencegate_"

// StatusQueryTimeoutDefault bounds a status query when
// Config.StatusQueryTimeout is zero (adapt.QueryTimeoutDefault).
const StatusQueryTimeoutDefault = adapt.QueryTimeoutDefault

// Config configures a Gate.
type Config struct {
	// Dialect is SQLite or Postgres. Required.
	Dialect *Dialect
	// Policy holds the trust bundle verifier, allowed operation classes
	// and status skew bound. Required (Policy.Verifier at least).
	Policy gate.Policy
	// Querier, if set, is asked for the grant's state when a mutation
	// carries no status proof, and to settle a lower fence whose proof is
	// too close to the grant at highestFence to order (see gate's
	// regression rule). Optional: without it such mutations are NOT_HELD
	// (or STALE_OWNER), and the close call is a REGRESSION_SUSPECTED
	// alarm. It is called with the fence row locked.
	Querier gate.StatusQuerier
	// StatusQueryTimeout bounds one Querier call (the fence row stays
	// locked meanwhile); a timeout is NOT_HELD. Optional, defaults to
	// StatusQueryTimeoutDefault.
	StatusQueryTimeout time.Duration
	// Clock is the gate's clock. Optional, defaults to the system clock
	// (clock.System); tests and the simulator inject one.
	Clock clock.Clock
	// Prefix is the table prefix. Optional, defaults to PrefixDefault.
	Prefix string
	// DefaultMode is the mode of a resource the gate sees for the first
	// time. Optional, defaults to gate.ModeEnforce.
	DefaultMode gate.Mode
	// CachedStatesMax bounds the resources whose last stored fence state
	// the Gate keeps, so that Run decides on it and stores with one
	// statement that compares it with the database's (fast.go): a cache
	// that is behind costs a statement, never a different answer.
	// Optional: zero takes CachedStatesMaxDefault; negative keeps none,
	// so every write reads the state first.
	CachedStatesMax int
}

// Gate applies fenced mutations in SQL transactions. It is safe for
// concurrent use. The only per-resource state it holds in memory is the
// cache of last stored states (Config.CachedStatesMax), which it never
// trusts: a decision on it stands only where the database holds that
// very state.
type Gate struct {
	d        *Dialect
	dec      adapt.Decider
	clock    clock.Clock
	prefix   string
	mode     gate.Mode
	counters gate.Counters
	stmt     statements
	prepared atomic.Pointer[map[string]*sql.Stmt]
	cache    *stateCache // nil: none
	// fastStored and fastMissed count the fast statements that stored
	// and that found the state moved (fast.go).
	fastStored, fastMissed atomic.Uint64
}

// New checks cfg and returns a Gate. It does not touch the database; call
// Migrate before the first Apply.
func New(cfg Config) (*Gate, error) {
	if cfg.Dialect == nil {
		return nil, errors.New("sqlgate: Config.Dialect is required")
	}
	b, err := adapter.Common{Policy: cfg.Policy, Querier: cfg.Querier, StatusQueryTimeout: cfg.StatusQueryTimeout,
		Clock: cfg.Clock, DefaultMode: cfg.DefaultMode}.Resolve()
	if err != nil {
		return nil, err
	}
	g := &Gate{d: cfg.Dialect, dec: b.Decider, clock: b.Clock, prefix: cfg.Prefix, mode: b.Mode, cache: newStateCache(cfg.CachedStatesMax)}
	if g.prefix == "" {
		g.prefix = PrefixDefault
	}
	if err := checkIdent("prefix", g.prefix); err != nil {
		return nil, err
	}
	g.stmt = newStatements(g)
	return g, nil
}

// Counters returns the per-outcome decision counters (for metrics).
func (g *Gate) Counters() *gate.Counters { return &g.counters }

// q substitutes the prefix and the dialect's placeholders.
func (g *Gate) q(s string) string {
	return g.d.placeholders(strings.ReplaceAll(s, "{p}", g.prefix))
}

func (g *Gate) nowMs() int64 { return g.clock.Now().UnixMilli() }

// DBTX is what both *sql.DB and *sql.Tx offer; read-only helpers accept
// either.
type DBTX interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
