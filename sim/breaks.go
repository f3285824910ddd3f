package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/memgate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// This file builds the round's gate: the product's adapter (memgate, or
// sqlgate in the SQL mode) with the product's policy — and it is where a
// negative control (Config.Negative) reaches the round. A negative
// control is never a change to product code, nor code the fencegate
// binary links: sim/negative builds each one, and the simulator only
// calls the hooks it fills in (Negative), or sets the product up as a
// deployment could (shadow mode, a trust bundle, a worker without a gate).

// Negative is one negative control: a run with one protection off, to
// show that the checker catches what that protection stops. Package
// sim/negative builds every one, by the name its --break gives it, and
// only it and the command that runs them (sim/cmd/simbreak) may link
// gate/gatebreak (imports_test.go): the fencegate binary links this
// package but neither of those, so `fencegate sim` runs the product as
// it ships. A zero field keeps the product's part.
type Negative struct {
	// Name is the control's --break name; "fence" is --unsafe.
	Name string
	// MemgateOnly: the control runs only on gate/memgate (no --sql, --obj
	// or --pg), because another adapter's own checks may refuse what it
	// lets through.
	MemgateOnly bool

	// What a deployment could configure, which the simulator sets up:

	// Shadow runs every resource in shadow mode: the gate decides and
	// records, and every write lands (lease-only; --unsafe).
	Shadow bool
	// TrustEveryKey gives the gate a trust bundle that trusts every key
	// the round knows, the attacker's too, for every epoch.
	TrustEveryKey bool
	// UngatedJobs makes the downstream worker apply every job it is
	// handed, with no gate at its target.
	UngatedJobs bool

	// Product parts replaced by the control's own function:

	// Policy returns the gate's policy with its decision replaced
	// (gate/gatebreak).
	Policy func(gate.Policy) gate.Policy
	// Store wraps the registry's store (a store that compares less).
	Store func(registry.Store) registry.Store
	// LeaseFrom is the instant a new lease's TTL counts from, in place of
	// the product's (the acquire's hand-off, core.Granted.From).
	LeaseFrom func(a *core.Acquire, rd core.AcquireReady) time.Time

	// The lease clock, as the worker's driver runs it:

	// CheckTTL refuses a TTL, in place of the client's
	// core.Limits.CheckTTL.
	CheckTTL func(o core.Limits, ttl time.Duration) error
	// LeaseLimits are the limits a lease of ttl runs under, in place of
	// the worker's own.
	LeaseLimits func(o core.Limits, ttl time.Duration) core.Limits
	// ReportsCertain is what the lease tells the worker deciding whether
	// to start an effect, in place of core.LeaseView.CertainAt at its now.
	ReportsCertain func(v core.LeaseView, now time.Time) bool
	// NoWakeInFlight: the driver does not look at a lease while a call is
	// in flight, though the core names its local deadline.
	NoWakeInFlight bool

	// The lock-set rounds' workers and waiters (RunLockSets; the other
	// rounds ignore them):

	// MultiLock: a worker takes a lock set's members one by one with plain
	// acquires, in the order it names them, holding those it has while it
	// waits for the next (the peers' MultiLock recipe).
	MultiLock bool
	// NoPoll: a waiting acquire is stepped only when one of its members'
	// records is written (its watch), never at its WakeAt (no poll on the
	// registry clock), so an expiry or a claim window passing unwritten
	// goes unnoticed.
	NoPoll bool

	// The read/write lock rounds' workers (RunRWLocks; the other rounds
	// ignore it; NoPoll applies to their waiters too):

	// TwoStepDowngrade: a worker downgrades its write lease as a release
	// then a read acquire (Curator's InterProcessReadWriteLock did,
	// curator#796), not with registry.Downgrade.
	TwoStepDowngrade bool
	// NoWake: a waiting acquire is stepped only when its lock's record is
	// written, neither at its WakeAt nor at its own deadline (a waiter
	// that lost its poll and its timer): the read/write lock rounds then
	// end with waits unanswered.
	NoWake bool
}

// gateAdapter returns the round's adapter: the goroutine's SQL
// environment when there is one, two objgates on a fresh bucket in the
// object mode, else a fresh memgate.
func (w *world) gateAdapter(env *sqlEnv, clock partyClock) gateAdapter {
	if env != nil && env.pg == nil {
		env.world, env.clock = w, clock
		return sqlAdapter{env}
	}
	cfg := memgate.Config{Policy: w.keys.gatePolicy(w.cfg.Negative), Clock: gateClock{w, clock}, DefaultMode: w.cfg.mode()}
	if w.cfg.StatusQuery {
		cfg.Querier = gate.QuerierFunc(w.queryStatus)
	}
	g, err := memgate.New(cfg)
	if err != nil {
		panic("sim: memgate: " + err.Error())
	}
	if env != nil {
		env.world, env.clock = w, clock
		return pgAdapter{env: env, jobs: memAdapter{g}}
	}
	if w.cfg.Objects {
		store := newObjStore(w.cfg.StoreFaults, w.seed)
		gs := objGates(w.round, store, objgate.Config{Policy: cfg.Policy, Clock: cfg.Clock, Querier: cfg.Querier, DefaultMode: cfg.DefaultMode})
		return &objAdapter{gates: gs, store: store, pick: rand.New(rand.NewPCG(w.seed, objPickStream)), jobs: memAdapter{g}}
	}
	return memAdapter{g}
}

// objPickStream is the second word of the object mode's generator, which
// spreads writes between its gates (the first is the round's seed).
const objPickStream = 0x6f626a67617465 // "objgate"

// mode is the resources' mode: shadow for the lease-only negative
// control (the gate decides and records, but every write goes through).
func (c *Config) mode() gate.Mode {
	if c.Negative != nil && c.Negative.Shadow {
		return gate.ModeShadow
	}
	return gate.ModeEnforce
}

// gatePolicy is the gate's policy for a run with negative control n (or
// none). The caches are shared; the policy value is the run's own.
func (k *keySet) gatePolicy(n *Negative) gate.Policy {
	p := *k.policy
	if n == nil {
		return p
	}
	if n.TrustEveryKey {
		p = *k.trustAll
	}
	if n.Policy != nil {
		p = n.Policy(p)
	}
	return p
}

// gateClock is a gate's clock in the round.
type gateClock struct {
	w *world
	c partyClock
}

func (c gateClock) Now() time.Time { return c.c.at(c.w.now) }

func (c gateClock) After(time.Duration) <-chan time.Time {
	panic("sim: the gate set a timer") // no adapter waits on its clock
}

// queryStatus is the gate's linearizable status query to the registry,
// made while the decision holds the resource. It goes over the simulated
// network only in that a partition between gate and registry fails it; a
// failure never accepts.
func (w *world) queryStatus(ctx context.Context, g *grant.Grant) (grant.State, uint64, error) {
	if w.cut(pGate, pRegistry, w.now) {
		return "", 0, errPartitioned
	}
	is, err := w.registry().Status(ctx, g)
	if err != nil {
		return "", 0, err
	}
	w.chk.said(is)
	return is.Status.State, is.Status.IssuerEpoch, nil
}

var errPartitioned = errors.New("sim: gate and registry are partitioned")

// registryStore is the store a registry replica commits to: the round's
// view of the shared store, or what a negative control wraps it in.
func (w *world) registryStore(s registry.Store) registry.Store {
	if n := w.cfg.Negative; n != nil && n.Store != nil {
		return n.Store(s)
	}
	return s
}

// leaseFrom is the instant the new lease's TTL counts from: the product's
// rule (the core's hand-off, Granted.From), or a negative control's.
func (k *worker) leaseFrom(a *core.Acquire, rd core.AcquireReady) time.Time {
	if n := k.w.cfg.Negative; n != nil && n.LeaseFrom != nil {
		return n.LeaseFrom(a, rd)
	}
	if rd.Granted == nil {
		return time.Time{}
	}
	return rd.Granted.From
}

// ungatedJobs reports whether the downstream worker applies every job
// with no gate at its target (a negative control).
func (w *world) ungatedJobs() bool { return w.cfg.Negative != nil && w.cfg.Negative.UngatedJobs }

// negativeName is the run's negative control's name, or "" for none.
func (c *Config) negativeName() string {
	if c.Negative == nil {
		return ""
	}
	return c.Negative.Name
}

// refusesTTL is the client's refusal of a TTL its margins cannot keep
// (core.Limits.CheckTTL), or a negative control's.
func (w *world) refusesTTL(o core.Limits, ttl time.Duration) error {
	if n := w.cfg.Negative; n != nil && n.CheckTTL != nil {
		return n.CheckTTL(o, ttl)
	}
	return o.CheckTTL(ttl)
}

// leaseLimits are the limits a lease of ttlMs runs under: the worker's,
// or a negative control's.
func (k *worker) leaseLimits(ttlMs uint64) core.Limits {
	if n := k.w.cfg.Negative; n != nil && n.LeaseLimits != nil {
		return n.LeaseLimits(k.limits, time.Duration(ttlMs)*time.Millisecond)
	}
	return k.limits
}

// reportsCertain is what the lease reports to the worker deciding
// whether to start an effect: core.LeaseView.CertainAt at its now, or a
// negative control's answer.
func (k *worker) reportsCertain(l *core.Lease) bool {
	if n := k.w.cfg.Negative; n != nil && n.ReportsCertain != nil {
		return n.ReportsCertain(l.View(), k.localNow())
	}
	return l.View().CertainAt(k.localNow())
}

// wakesWhileInFlight reports whether the driver looks at a lease again
// at the instant its core names while a call is in flight (its
// deadline); not under a negative control that says otherwise.
func (w *world) wakesWhileInFlight() bool {
	return w.cfg.Negative == nil || !w.cfg.Negative.NoWakeInFlight
}
