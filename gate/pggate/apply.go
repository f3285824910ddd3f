package pggate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
)

// DBTX is what the read-only calls need: a *sql.DB, *sql.Conn or *sql.Tx.
type DBTX interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SQLSTATEs of the gate. Every outcome but ACCEPTED raises its own code
// in class FG; REPLAYED is FG100 (the write already stands).
const (
	StateReplayed  = "FG100" // REPLAYED: roll back; the original receipt is in the detail
	StateUnguarded = "FG020" // a protected table written outside an accepting apply (enforce)
	StateRefused   = "FG021" // an operator action refused (resume, mode downgrade, …)
)

// SQLState returns the SQLSTATE fencegate.apply raises for outcome o
// ("" for ACCEPTED and unknown codes).
func SQLState(o gate.Outcome) string { return outcomeStates[o] }

var outcomeStates = map[gate.Outcome]string{
	gate.Replayed: StateReplayed, gate.Malformed: "FG001", gate.BadProof: "FG002", gate.BindingMismatch: "FG003",
	gate.IdentityMismatch: "FG004", gate.NotHeld: "FG005", gate.EpochRevoked: "FG006", gate.PolicyStale: "FG007",
	gate.ProofExpired: "FG008", gate.StaleOwner: "FG009", gate.SegmentGap: "FG010", gate.RootMismatch: "FG011",
	gate.Quarantined: "FG012", gate.FenceRegression: "FG013", gate.ResourcePaused: "FG014",
	gate.ReadGrant: "FG015", // schema version 10
}

// ErrRefused is wrapped by an operator action the database refused
// (FG021) when no more precise gate sentinel fits.
var ErrRefused = errors.New("pggate: refused")

// Apply calls fencegate.apply for m in tx, with m's own payload digest,
// before the business change. It returns what gate adapters return: the
// receipt and nil (ACCEPTED, or a shadow-mode pass-through whose receipt
// carries the would-be outcome), the original receipt and a *gate.Rejection
// matching gate.ErrReplayed, or a *gate.Rejection. After any error tx is
// aborted: roll it back (and, when the rejection is Recorded, call Record).
func Apply(ctx context.Context, tx *sql.Tx, m *gate.Mutation) (gate.Receipt, error) {
	env, err := m.MarshalJSON()
	if err != nil {
		return gate.Receipt{}, fmt.Errorf("pggate: apply: %w", err)
	}
	var out string
	err = tx.QueryRowContext(ctx, `SELECT fencegate.apply($1, $2)::text`, string(env), m.PayloadDigest.String()).Scan(&out)
	if err != nil {
		return rejection(err)
	}
	return result([]byte(out), m)
}

// Record calls fencegate.record for m in a transaction of its own: it
// keeps the alarm, quarantine entry or pause of a rejection whose
// transaction was rolled back. It never accepts. A rejection it meets
// again (the envelope no longer authenticates) leaves nothing to record
// and is not an error.
func Record(ctx context.Context, db *sql.DB, m *gate.Mutation) error {
	return recordIn(ctx, func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) }, m)
}

// ErrBusiness wraps the error of Run's business function.
var ErrBusiness = errors.New("pggate: business change failed")

// Run applies m in a new transaction of db, runs business in it when the
// gate lets the change proceed, and commits; a rejection whose records
// matter is recorded in a second transaction (Record). It returns what
// Apply returns, or an error wrapping ErrBusiness.
func Run(ctx context.Context, db *sql.DB, m *gate.Mutation, business func(context.Context, *sql.Tx) error) (gate.Receipt, error) {
	return RunIn(ctx, db, func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) }, m, business)
}

// RunIn is Run whose transactions begin (and are prepared, e.g. with the
// caller's role) by begin.
func RunIn(ctx context.Context, db *sql.DB, begin func(context.Context) (*sql.Tx, error), m *gate.Mutation, business func(context.Context, *sql.Tx) error) (gate.Receipt, error) {
	tx, err := begin(ctx)
	if err != nil {
		return gate.Receipt{}, fmt.Errorf("pggate: begin: %w", err)
	}
	defer tx.Rollback()
	rc, err := Apply(ctx, tx, m)
	if err != nil {
		tx.Rollback()
		var rej *gate.Rejection
		if errors.As(err, &rej) && rej.Recorded {
			if rerr := recordIn(ctx, begin, m); rerr != nil {
				return gate.Receipt{}, errors.Join(err, rerr)
			}
		}
		return rc, err
	}
	if err := business(ctx, tx); err != nil {
		return gate.Receipt{}, fmt.Errorf("%w: %w", ErrBusiness, err)
	}
	if err := tx.Commit(); err != nil {
		return gate.Receipt{}, fmt.Errorf("pggate: commit: %w", err)
	}
	return rc, nil
}

func recordIn(ctx context.Context, begin func(context.Context) (*sql.Tx, error), m *gate.Mutation) error {
	tx, err := begin(ctx)
	if err != nil {
		return fmt.Errorf("pggate: record: %w", err)
	}
	defer tx.Rollback()
	env, err := m.MarshalJSON()
	if err != nil {
		return fmt.Errorf("pggate: record: %w", err)
	}
	var out string
	err = tx.QueryRowContext(ctx, `SELECT fencegate.record($1, $2)::text`, string(env), m.PayloadDigest.String()).Scan(&out)
	if err != nil {
		if _, rerr := rejection(err); gate.OutcomeOf(rerr) != "" {
			return nil // authentication failed again: nothing to record
		}
		return fmt.Errorf("pggate: record: %w", err)
	}
	return tx.Commit()
}

// detail is the JSON DETAIL of a rejection.
type detail struct {
	Outcome        gate.Outcome    `json:"outcome"`
	Reason         string          `json:"reason"`
	Resource       string          `json:"resource"`
	FenceToken     uint64          `json:"fenceToken"`
	SegmentSeq     uint64          `json:"segmentSeq"`
	HighestFence   uint64          `json:"highestFence"`
	LastSegmentSeq uint64          `json:"lastSegmentSeq"`
	Also           gate.Outcome    `json:"also"`
	Alarm          gate.AlarmKind  `json:"alarm"`
	Recorded       bool            `json:"recorded"`
	Receipt        json.RawMessage `json:"receipt"`
}

// rejection turns a database error into a *gate.Rejection when it is one
// of the gate's (class FG); other errors are wrapped as they are.
func rejection(err error) (gate.Receipt, error) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Code, "FG") || pe.Code == StateUnguarded || pe.Code == StateRefused {
		return gate.Receipt{}, fmt.Errorf("pggate: %w", err)
	}
	var d detail
	if jerr := json.Unmarshal([]byte(pe.Detail), &d); jerr != nil || SQLState(d.Outcome) != pe.Code {
		return gate.Receipt{}, fmt.Errorf("pggate: rejection %s without a valid detail (%v): %w", pe.Code, jerr, err)
	}
	rej := &gate.Rejection{Outcome: d.Outcome, Resource: d.Resource, FenceToken: d.FenceToken, SegmentSeq: d.SegmentSeq,
		HighestFence: d.HighestFence, LastSegmentSeq: d.LastSegmentSeq, Reason: d.Reason, Also: d.Also,
		Recorded: d.Recorded, Alarm: d.Alarm}
	if d.Outcome != gate.Replayed {
		return gate.Receipt{}, rej
	}
	rc, derr := gate.DecodeReceipt(d.Receipt)
	if derr != nil {
		return gate.Receipt{}, fmt.Errorf("pggate: replay without a valid receipt: %w", derr)
	}
	return rc, rej
}

// passThrough is what apply returns in shadow mode for a change it would
// have rejected.
type passThrough struct {
	Outcome gate.Outcome `json:"outcome"`
}

// result decodes apply's answer: a receipt, or a shadow pass-through.
func result(b []byte, m *gate.Mutation) (gate.Receipt, error) {
	var p passThrough
	if err := json.Unmarshal(b, &p); err != nil {
		return gate.Receipt{}, fmt.Errorf("pggate: apply answered %q: %w", b, err)
	}
	if p.Outcome == gate.Accepted {
		rc, err := gate.DecodeReceipt(b)
		if err != nil {
			return gate.Receipt{}, fmt.Errorf("pggate: apply answered a bad receipt: %w", err)
		}
		return rc, nil
	}
	return gate.Receipt{Resource: m.Resource, FenceToken: m.FenceToken, OperationID: m.OperationID,
		SegmentSeq: m.SegmentSeq, PayloadDigest: m.PayloadDigest, Mode: gate.ModeShadow, Outcome: p.Outcome}, nil
}
