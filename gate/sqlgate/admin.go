package sqlgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/adapter"
)

// State returns the resource's fence state (zero gate.FenceState with the gate's
// default mode if the gate has never seen it). It takes no lock.
func (g *Gate) State(ctx context.Context, q DBTX, resource string) (gate.FenceState, error) {
	st, err := g.scanState(ctx, q, g.stmt.readState, resource)
	if errors.Is(err, sql.ErrNoRows) {
		return gate.FenceState{Resource: resource, Mode: g.mode}, nil
	}
	if err != nil {
		return st, fmt.Errorf("sqlgate: read state: %w", err)
	}
	return st, nil
}

// QueryOperation answers MUTATION_UNKNOWN recovery for an operation that
// was attempted under fence: ACCEPTED with its receipts, PROVEN_ABSENT, or
// UNDETERMINED (gate.Judge states the rule). Both reads happen in one
// transaction, so the verdict is consistent.
func (g *Gate) QueryOperation(ctx context.Context, db *sql.DB, resource, operationID string, fence uint64) (gate.Answer, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: g.d == Postgres, Isolation: g.isolationForRead()})
	if err != nil {
		return gate.Answer{}, fmt.Errorf("sqlgate: query operation: %w", err)
	}
	defer tx.Rollback()
	st, err := g.State(ctx, tx, resource)
	if err != nil {
		return gate.Answer{}, err
	}
	rs, err := g.scanReceipts(sqlRows(tx.QueryContext(ctx, g.stmt.receiptsByOp, resource, operationID)))
	if err != nil {
		return gate.Answer{}, err
	}
	return gate.Judge(rs, st.HighestFence, fence), nil
}

func (g *Gate) isolationForRead() sql.IsolationLevel {
	if g.d == Postgres {
		return sql.LevelRepeatableRead
	}
	return sql.LevelDefault
}

// SetMode moves a resource to mode and records who did it. Moving from
// enforce to anything else is refused with gate.ErrModeDowngrade.
func (g *Gate) SetMode(ctx context.Context, db *sql.DB, resource string, mode gate.Mode, operator string) error {
	return g.operatorTx(ctx, db, adapter.SetMode(resource, operator, mode), func(tx *sql.Tx, next gate.FenceState) error {
		_, err := tx.ExecContext(ctx, g.q(`UPDATE {p}resources SET mode = $2 WHERE resource = $1`), resource, string(next.Mode))
		return err
	})
}

// SetMinPolicyGeneration raises the lowest grant policy generation the
// resource accepts. It only rises.
func (g *Gate) SetMinPolicyGeneration(ctx context.Context, db *sql.DB, resource string, gen uint64, operator string) error {
	return g.operatorTx(ctx, db, adapter.RaiseMinPolicy(resource, operator, gen, g.mode), func(tx *sql.Tx, next gate.FenceState) error {
		_, err := tx.ExecContext(ctx, g.q(`UPDATE {p}resources SET min_policy_generation = $2 WHERE resource = $1`), resource, int64(next.MinPolicyGeneration))
		return err
	})
}

// Resume lifts a FENCE_REGRESSION pause. The operator states the
// registry's fence floor for the resource; gate.Resume refuses unless it
// is above highestFence, and the floor is kept with the instant of the
// resume (grants at or below it stay rejected without pausing again). The
// action is recorded in operator_actions.
func (g *Gate) Resume(ctx context.Context, db *sql.DB, resource string, registryFloor uint64, operator, note string) error {
	return g.operatorTx(ctx, db, adapter.Resume(resource, operator, registryFloor, note, g.mode), func(tx *sql.Tx, next gate.FenceState) error {
		_, err := tx.ExecContext(ctx, g.stmt.storeResume, resource, int64(next.Floor), timeMs(next.FloorAt))
		return err
	})
}

// operatorTx runs one recorded operator action on a locked resource row,
// creating the row in the action's mode if the gate has never seen the
// resource; store writes the columns the action changed.
func (g *Gate) operatorTx(ctx context.Context, db *sql.DB, a adapter.Action, store func(*sql.Tx, gate.FenceState) error) error {
	if err := a.Check("sqlgate"); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlgate: begin: %w", err)
	}
	defer tx.Rollback()
	st, err := g.lockStateCreating(ctx, tx, a.Resource, a.CreateMode)
	if err != nil {
		return err
	}
	now := g.clock.Now()
	next, detail, err := a.Step(st, true, now)
	if err == nil {
		err = store(tx, next)
	}
	if err != nil {
		return err
	}
	detail = strings.TrimSpace(detail)
	if _, err := tx.ExecContext(ctx, g.stmt.insertAction, a.Resource, strings.Fields(detail)[0], a.Operator, detail, now.UnixMilli()); err != nil {
		return fmt.Errorf("sqlgate: record operator action: %w", err)
	}
	return tx.Commit()
}
