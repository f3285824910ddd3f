// Package memgate is applyFencedMutation over process memory: the same
// authentication and decision as every adapter (gate.Policy.Authenticate
// and adapt.Decider.DecideLocked), with each resource's fence state,
// receipts, alarms, quarantine and shadow log kept in memory and changed
// atomically with the business change under the resource's lock.
//
// It is for state that lives in one process and dies with it — an
// in-process state machine, a cache a worker owns, tests, and the
// simulator's fast mode. It offers fenced writes for as long as the
// process lives: nothing survives a restart, so a restarted process must
// start from a fence floor above anything it could have seen (Resume
// after a restart, or rebuild its state from a durable source). Use
// gate/sqlgate (or another durable adapter) for anything that must
// outlive the process.
//
// Apply behaves as sqlgate.Gate.Run: ACCEPTED runs the business function
// and stores the receipt and the new state; REPLAYED returns the original
// receipt; shadow mode runs the function for every outcome but REPLAYED
// and records the would-be rejection; a rejection runs nothing and
// records what the decision asks for (alarm, quarantine, pause). A
// business function that fails leaves everything as it was.
package memgate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/internal/adapter"
)

// Config configures a Gate.
type Config struct {
	// Policy holds the trust bundle verifier, allowed operation classes
	// and status skew bound. Required (Policy.Verifier at least).
	Policy gate.Policy
	// Querier, if set, answers status queries for mutations without a
	// status proof and settles close calls of the regression rule. It is
	// called with the resource locked. Optional.
	Querier gate.StatusQuerier
	// StatusQueryTimeout bounds one Querier call. Optional, defaults to
	// adapt.QueryTimeoutDefault.
	StatusQueryTimeout time.Duration
	// Clock is the gate's clock. Optional, defaults to the system clock.
	Clock clock.Clock
	// DefaultMode is the mode of a resource seen for the first time.
	// Optional, defaults to gate.ModeEnforce.
	DefaultMode gate.Mode
}

// BusinessFunc makes the protected change. It runs with the resource
// locked, only when the gate lets the mutation through; if it returns an
// error the gate stores nothing (it must leave its own state unchanged
// too).
type BusinessFunc func() error

// ErrBusiness wraps the error of a business function that failed.
var ErrBusiness = errors.New("memgate: business change failed")

// Gate applies fenced mutations to in-memory resources. Safe for
// concurrent use: applies on one resource serialize, others proceed.
type Gate struct {
	dec      adapt.Decider
	clock    clock.Clock
	mode     gate.Mode
	counters gate.Counters

	mu        sync.Mutex
	resources map[string]*resource
}

// New checks cfg and returns an empty Gate.
func New(cfg Config) (*Gate, error) {
	b, err := adapter.Common{Policy: cfg.Policy, Querier: cfg.Querier, StatusQueryTimeout: cfg.StatusQueryTimeout,
		Clock: cfg.Clock, DefaultMode: cfg.DefaultMode}.Resolve()
	if err != nil {
		return nil, err
	}
	return &Gate{dec: b.Decider, clock: b.Clock, mode: b.Mode, resources: map[string]*resource{}}, nil
}

// Counters returns the per-outcome decision counters.
func (g *Gate) Counters() *gate.Counters { return &g.counters }

// resource returns name's resource, creating it in the default mode.
func (g *Gate) resource(name string) *resource { return g.resourceIn(name, g.mode) }

// resourceIn returns name's resource, creating it in mode on first sight.
func (g *Gate) resourceIn(name string, mode gate.Mode) *resource {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.resources[name]
	if r == nil {
		r = newResource(name, mode)
		g.resources[name] = r
	}
	return r
}

// Apply is applyFencedMutation for a mutation sent by the authenticated
// caller; fn is the business change (see the package doc for what each
// outcome returns).
func (g *Gate) Apply(ctx context.Context, caller string, m *gate.Mutation, fn BusinessFunc) (gate.Receipt, error) {
	v, err := g.dec.Policy.Authenticate(m, caller)
	if err != nil {
		g.counters.Add(gate.OutcomeOf(err))
		return gate.Receipt{}, err
	}
	r := g.resource(m.Resource)
	r.mu.Lock()
	defer r.mu.Unlock()
	prior := r.receipt(m.FenceToken, m.SegmentSeq)
	now := g.clock.Now()
	d := g.dec.DecideLocked(ctx, v, r.state, prior, now)
	if d.Proceed {
		if err := fn(); err != nil {
			return gate.Receipt{}, fmt.Errorf("%w: %w", ErrBusiness, err)
		}
	}
	r.commit(&g.dec, d, v, prior, now)
	g.counters.Add(d.Outcome)
	return adapt.Result(d, m)
}

// State returns the resource's fence state (a zero gate.FenceState in the default
// mode if the gate has never seen it).
func (g *Gate) State(resource string) gate.FenceState {
	g.mu.Lock()
	r := g.resources[resource]
	g.mu.Unlock()
	if r == nil {
		return gate.FenceState{Resource: resource, Mode: g.mode}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// QueryOperation answers MUTATION_UNKNOWN recovery for an operation
// attempted under fence (gate.Judge states the rule).
func (g *Gate) QueryOperation(resource, operationID string, fence uint64) gate.Answer {
	r := g.resource(resource)
	r.mu.Lock()
	defer r.mu.Unlock()
	return gate.Judge(append([]gate.Receipt(nil), r.byOp[operationID]...), r.state.HighestFence, fence)
}

// Resume lifts a FENCE_REGRESSION pause once the operator states a
// registry fence floor above highestFence (gate.Resume), and records it.
func (g *Gate) Resume(name string, registryFloor uint64, operator, note string) error {
	return g.operator(adapter.Resume(name, operator, registryFloor, note, g.mode))
}

// SetMode moves a resource to mode (shadow → enforce only); a resource
// the gate has never seen starts in mode.
func (g *Gate) SetMode(name string, mode gate.Mode, operator string) error {
	return g.operator(adapter.SetMode(name, operator, mode))
}

// SetMinPolicyGeneration raises the lowest grant policy generation the
// resource accepts. It only rises.
func (g *Gate) SetMinPolicyGeneration(name string, gen uint64, operator string) error {
	return g.operator(adapter.RaiseMinPolicy(name, operator, gen, g.mode))
}

// operator runs one recorded operator action on the resource, created in
// the action's mode on first sight, under its lock.
func (g *Gate) operator(a adapter.Action) error {
	if err := a.Check("memgate"); err != nil {
		return err
	}
	if _, err := gate.ParseMode(string(a.CreateMode)); err != nil {
		return err
	}
	r := g.resourceIn(a.Resource, a.CreateMode)
	r.mu.Lock()
	defer r.mu.Unlock()
	now := g.clock.Now()
	next, detail, err := a.Step(r.state, true, now)
	if err != nil {
		return err
	}
	g.dec.CheckStore(r.state, next)
	r.state = next
	r.record(Record{Kind: KindOperator, Detail: a.Operator + ": " + detail, At: now})
	return nil
}

// Records returns the resource's records of kind ("" for all), oldest
// first.
func (g *Gate) Records(resource, kind string) []Record {
	r := g.resource(resource)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for _, rec := range r.records {
		if kind == "" || rec.Kind == kind {
			out = append(out, rec)
		}
	}
	return out
}

// ApplyJob is Apply for a job an accepted upstream write handed off
// (gate.Job): it authenticates the job for hop, reads the upstream
// receipt the job names from upstream (nil: this gate's own resources),
// decides with gate.DecideJob under the target's lock and, if accepted,
// runs fn and stores the target's receipt. The returns are Apply's:
// REPLAYED for a job already applied (fn does not run again), STALE_OWNER
// for a job of a superseded owner, SEGMENT_GAP for a job whose
// predecessor under its fence has not been applied yet.
func (g *Gate) ApplyJob(ctx context.Context, hop string, j *gate.Job, upstream gate.UpstreamReceipts, fn BusinessFunc) (gate.Receipt, error) {
	v, err := g.dec.Policy.AuthenticateJob(j, hop)
	if err != nil {
		g.counters.Add(gate.OutcomeOf(err))
		return gate.Receipt{}, err
	}
	if upstream == nil {
		upstream = g
	}
	up, err := upstream.ReceiptAt(ctx, j.Resource, j.FenceToken, j.SegmentSeq)
	if err != nil {
		return gate.Receipt{}, fmt.Errorf("memgate: upstream receipt of job %s/%d/%d: %w", j.Resource, j.FenceToken, j.SegmentSeq, err)
	}
	r := g.resource(j.Target)
	r.mu.Lock()
	defer r.mu.Unlock()
	prior := r.receipt(v.Mutation.FenceToken, v.Mutation.SegmentSeq)
	now := g.clock.Now()
	d := gate.DecideJob(gate.JobInput{Job: j, Verified: v, State: r.state, Prior: prior, Upstream: up, Now: now})
	if d.Proceed {
		if err := fn(); err != nil {
			return gate.Receipt{}, fmt.Errorf("%w: %w", ErrBusiness, err)
		}
	}
	r.commit(&g.dec, d, v, prior, now)
	g.counters.Add(d.Outcome)
	return adapt.Result(d, &v.Mutation)
}

// ReceiptAt returns the receipt for (resource, fence, seq), or nil: the
// gate as a job's upstream (gate.UpstreamReceipts).
func (g *Gate) ReceiptAt(_ context.Context, resource string, fence, seq uint64) (*gate.Receipt, error) {
	g.mu.Lock()
	r := g.resources[resource]
	g.mu.Unlock()
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.receipt(fence, seq), nil
}
