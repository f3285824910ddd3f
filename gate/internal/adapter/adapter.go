// Package adapter is what the gate adapters in this tree (gate/memgate,
// gate/sqlgate, gate/objgate, gate/redisgate) share besides packages gate
// and gate/adapt, which any adapter may use: the
// part of their Config that is the gate's own, checked and defaulted in
// one place (Common.Resolve), and the operator actions as they run them
// (Action): one pure step on the resource's state and the record of it.
// Each adapter keeps what is its own: where the state lives, how it is
// locked, and its defaults of prefix, retries and store checks.
package adapter

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/grant"
)

// Common is the part of every adapter's Config that is the gate's own,
// as the caller gave it; each adapter documents the fields on its Config.
type Common struct {
	Policy             gate.Policy
	Querier            gate.StatusQuerier
	StatusQueryTimeout time.Duration
	Clock              clock.Clock
	DefaultMode        gate.Mode
}

// Base is Common checked, with its defaults filled in.
type Base struct {
	Decider adapt.Decider
	Clock   clock.Clock
	Mode    gate.Mode
}

// Resolve checks c — the policy (gate.Policy.Check, which also fills in
// its own defaults) and the mode — and fills in the defaults every
// adapter documents: the system clock, enforce mode for a resource seen
// for the first time, adapt.QueryTimeoutDefault (adapt.Decider's own).
func (c Common) Resolve() (Base, error) {
	if err := c.Policy.Check(); err != nil {
		return Base{}, err
	}
	b := Base{Decider: adapt.Decider{Policy: c.Policy, Querier: c.Querier, QueryTimeout: c.StatusQueryTimeout}, Clock: c.Clock, Mode: c.DefaultMode}
	if b.Clock == nil {
		b.Clock = clock.System{}
	}
	if b.Mode == "" {
		b.Mode = gate.ModeEnforce
	}
	if _, err := gate.ParseMode(string(b.Mode)); err != nil {
		return Base{}, err
	}
	return b, nil
}

// Action is one recorded operator action: who asks, on which resource,
// the mode a resource never seen is created in, and the pure step on the
// resource's state (adapt.SetModeAction and its kind). Each adapter reads
// the state its own way, runs Step, and stores the result with a record
// of it.
type Action struct {
	Resource, Operator string
	CreateMode         gate.Mode
	step               func(st gate.FenceState, now time.Time) (gate.FenceState, string, error)
}

// SetMode moves a resource to mode (adapt.SetModeAction); a resource never
// seen is created in it.
func SetMode(resource, operator string, mode gate.Mode) Action {
	return Action{Resource: resource, Operator: operator, CreateMode: mode,
		step: func(st gate.FenceState, _ time.Time) (gate.FenceState, string, error) {
			return adapt.SetModeAction(st, mode)
		}}
}

// RaiseMinPolicy raises a resource's minimum grant policy generation to
// gen (adapt.RaiseMinPolicyAction); a resource never seen is created in
// the gate's mode.
func RaiseMinPolicy(resource, operator string, gen uint64, mode gate.Mode) Action {
	return Action{Resource: resource, Operator: operator, CreateMode: mode,
		step: func(st gate.FenceState, _ time.Time) (gate.FenceState, string, error) {
			return adapt.RaiseMinPolicyAction(st, gen)
		}}
}

// Resume lifts a resource's pause with the registry floor the operator
// states (adapt.ResumeAction), at the instant Step is given.
func Resume(resource, operator string, registryFloor uint64, note string, mode gate.Mode) Action {
	return Action{Resource: resource, Operator: operator, CreateMode: mode,
		step: func(st gate.FenceState, now time.Time) (gate.FenceState, string, error) {
			return adapt.ResumeAction(st, registryFloor, now, note)
		}}
}

// Check refuses an action without the operator's name or on an invalid
// resource name; pkg starts the message ("objgate").
func (a Action) Check(pkg string) error {
	if a.Operator == "" {
		return errors.New(pkg + ": operator actions need the operator's name")
	}
	return CheckResource(pkg, a.Resource)
}

// CheckResource validates a resource name an operator or a query gave;
// pkg starts the message ("objgate").
func CheckResource(pkg, resource string) error {
	if err := grant.ValidateResource(resource); err != nil {
		return fmt.Errorf("%s: resource %q: %w", pkg, resource, err)
	}
	return nil
}

// Step runs the action on st, the resource's state as read (seen false:
// the store has none, and the resource is created in CreateMode), at now
// by the gate's clock. It returns the next state and the line to record
// with the operator's name, or an error and no change.
func (a Action) Step(st gate.FenceState, seen bool, now time.Time) (gate.FenceState, string, error) {
	if !seen {
		st.Mode = a.CreateMode
	}
	return a.step(st, now)
}

// Record is the action's record in the key-value adapters' stored form,
// for the line Step returned.
func (a Action) Record(detail string, now time.Time) stored.Record {
	return stored.Record{Kind: stored.RecordAction, Resource: a.Resource, Operator: a.Operator,
		Outcome: strings.Fields(detail)[0], Detail: detail, AtMs: now.UnixMilli()}
}
