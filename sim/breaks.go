package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatebreak"
	"github.com/fencegate/fencegate/gate/memgate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// This file holds the simulator's negative controls (--break). Most
// build the round's gate: the product's adapter (memgate, or
// sqlgate in the SQL mode) with the product's policy — or, for a negative
// control, the same adapter with one protection removed. A broken
// protection is never a change to product code: lease-only is the
// adapter's own shadow mode, no-auth is a trust bundle that trusts every
// key, and the decision bugs replace gate.Decide through
// gate/gatebreak.Replace by wrappers that call gate.Decide on a
// doctored input or doctor its output. One protection is the registry
// store's: content-compare puts a wrapper between the registry and
// registry/memstore that drops what each write was decided on. Two are
// the client's, restored from outside its cores: first-send counts a
// lease from its acquire's first send, and lease-clock runs the lease
// clock as it was before issue 42 (at the end of this file).

// gateAdapter returns the round's adapter: the goroutine's SQL
// environment when there is one, two objgates on a fresh bucket in the
// object mode, else a fresh memgate.
func (w *world) gateAdapter(env *sqlEnv, clock partyClock) gateAdapter {
	if env != nil && env.pg == nil {
		env.world, env.clock = w, clock
		return sqlAdapter{env}
	}
	cfg := memgate.Config{Policy: w.keys.gatePolicy(w.cfg.Break), Clock: gateClock{w, clock}, DefaultMode: w.cfg.mode()}
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

// mode is the resources' mode: shadow is the lease-only negative control
// (the gate decides and records, but every write goes through).
func (c *Config) mode() gate.Mode {
	if c.Break == BreakFence {
		return gate.ModeShadow
	}
	return gate.ModeEnforce
}

// gatePolicy is the gate's policy for a run with protection b broken (or
// none). The caches are shared; the policy value is the run's own.
func (k *keySet) gatePolicy(b Break) gate.Policy {
	p := *k.policy
	switch b {
	case BreakAuth:
		p = *k.trustAll
	case BreakPollution:
		p = gatebreak.Replace(p, decidePolluting)
	case BreakSegments:
		p = gatebreak.Replace(p, decideIgnoringSegments)
	case BreakRegression:
		p = gatebreak.Replace(p, decideTrustingRegistry)
	case BreakOldRule:
		p = gatebreak.Replace(p, decideOldRule)
	case BreakNoAlarm:
		p = gatebreak.Replace(p, decideSilently)
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

// decidePolluting raises highestFence on a rejection: the bug of a gate
// that touches resource state before it has decided.
func decidePolluting(in gate.Input) gate.Decision {
	d := gate.Decide(in)
	if d.Outcome != gate.Accepted && d.Outcome != gate.Replayed && d.Outcome != gate.FenceRegression {
		d.Store = true
		d.State.HighestFence = max(in.State.HighestFence, in.Verified.Mutation.FenceToken)
	}
	return d
}

// decideIgnoringSegments accepts whatever segment comes: the state is
// doctored so that the segment looks like the next one.
func decideIgnoringSegments(in gate.Input) gate.Decision {
	if d := gate.Decide(in); d.Outcome != gate.SegmentGap {
		return d
	}
	v := in.Verified
	in.State.HighestFence, in.State.Root, in.State.GrantDigest = v.Mutation.FenceToken, v.Root, v.GrantDigest
	in.State.LastSegmentSeq = v.Mutation.SegmentSeq - 1
	return gate.Decide(in)
}

// decideTrustingRegistry lets a grant proven current through whatever its
// fence: the state is doctored to just below it (the spec's "clear the
// highest value to restore traffic").
func decideTrustingRegistry(in gate.Input) gate.Decision {
	in.State.Paused = false
	fence := in.Verified.Mutation.FenceToken
	if in.Prior != nil && in.Prior.GrantDigest != in.Verified.GrantDigest {
		in.Prior = nil
	}
	if fence <= in.State.HighestFence && in.Prior == nil && in.Status.ProvesHeld(in.Now, in.StatusSkewMax) {
		in.State.HighestFence, in.State.LastSegmentSeq, in.State.Root, in.State.GrantDigest = fence-1, 0, grant.Digest{}, grant.Digest{}
		in.State.Floor = 0
	}
	return gate.Decide(in)
}

// decideOldRule is the rule before issue 12: any fence below highestFence
// whose status proves HELD is a FENCE_REGRESSION, which pauses the
// resource — on an ordinary late write too.
func decideOldRule(in gate.Input) gate.Decision {
	d := gate.Decide(in)
	if d.Outcome != gate.StaleOwner || !in.Status.ProvesHeld(in.Now, in.StatusSkewMax) {
		return d
	}
	m := &in.Verified.Mutation
	d.Outcome, d.Alarm, d.AlarmKind, d.Store, d.Confirm = gate.FenceRegression, true, gate.AlarmRegression, true, false
	d.State = in.State
	d.State.Paused, d.State.PausedReason = true, "FENCE_REGRESSION (the old rule)"
	d.Err = &gate.Rejection{Outcome: gate.FenceRegression, Also: gate.StaleOwner, Resource: m.Resource, FenceToken: m.FenceToken,
		SegmentSeq: m.SegmentSeq, HighestFence: in.State.HighestFence, Reason: "the old rule: a lower fence proven HELD", Recorded: true,
		Alarm: gate.AlarmRegression}
	return d
}

// decideSilently refuses on evidence of a regression without telling
// anyone: no alarm, no pause.
func decideSilently(in gate.Input) gate.Decision {
	d := gate.Decide(in)
	if !d.Alarm {
		return d
	}
	m := &in.Verified.Mutation
	d.Outcome, d.Alarm, d.AlarmKind, d.Store, d.Confirm, d.State = gate.StaleOwner, false, "", false, false, in.State
	d.Err = &gate.Rejection{Outcome: gate.StaleOwner, Resource: m.Resource, FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq,
		HighestFence: in.State.HighestFence, Reason: "refused without an alarm"}
	return d
}

// revisionsOnly is the registry's store with its content compares taken
// away (--break content-compare): each Write's RecordWas and SettingsWas
// are dropped before registry/memstore sees it, so a commit holds on the
// revisions alone. After a restore that hands revisions out again, a
// registry replica that decided on a record it cached before the restore
// commits over the restored record: the checker counts such commits
// (LostUpdates).
type revisionsOnly struct{ registry.Store }

func (s revisionsOnly) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	w.RecordWas, w.SettingsWas = nil, nil
	return s.Store.Commit(ctx, w)
}

// leaseFrom is the instant the new lease's TTL counts from: the product's
// rule (the core's hand-off, Granted.From), or, with the first-send
// break, the rule before it, which left grants after long waits unusable.
func (k *worker) leaseFrom(a *core.Acquire, rd core.AcquireReady) time.Time {
	if k.w.cfg.Break == BreakFirstSend {
		return a.View().FirstSent
	}
	if rd.Granted == nil {
		return time.Time{}
	}
	return rd.Granted.From
}

// The lease clock before issue 42 (--break lease-clock), restored from
// outside the client's core, as a driver saw it: renewals at a share of
// the TTL rather than of the local life (the core's RenewFraction scaled
// by TTL / (TTL − ExpiryMargin) for each lease), no look at the lease
// while a call is in flight (the core then named no instant), the state
// as the machine last stepped it (core.LeaseView.Certain, not CertainAt), and
// no TTL refused below the client's margins. The checker's
// held-past-deadline and effect-past-deadline counts must then be
// non-zero at short TTLs (sim/break_test.go).

// refusesTTL is the client's refusal of a TTL its margins cannot keep
// (core.Limits.CheckTTL), or nothing under the lease-clock break.
func (w *world) refusesTTL(o core.Limits, ttl time.Duration) error {
	if w.cfg.Break == BreakLeaseClock {
		return nil
	}
	return o.CheckTTL(ttl)
}

// leaseLimits are the limits a lease of ttlMs runs under: the worker's,
// or under the lease-clock break the same with renewals at a share of
// the TTL.
func (k *worker) leaseLimits(ttlMs uint64) core.Limits {
	o := k.limits
	ttl := time.Duration(ttlMs) * time.Millisecond
	if life := o.Life(ttl); k.w.cfg.Break == BreakLeaseClock && life > 0 {
		o.RenewFraction *= float64(ttl) / float64(life)
	}
	return o
}

// reportsCertain is what the lease reports to the worker deciding
// whether to start an effect: core.LeaseView.CertainAt at its now, or under
// the lease-clock break the machine's last step.
func (k *worker) reportsCertain(l *core.Lease) bool {
	if k.w.cfg.Break == BreakLeaseClock {
		return l.View().Certain()
	}
	return l.View().CertainAt(k.localNow())
}

// wakesWhileInFlight reports whether the driver looks at a lease again
// at the instant its core names while a call is in flight (its
// deadline); not under the lease-clock break.
func (w *world) wakesWhileInFlight() bool { return w.cfg.Break != BreakLeaseClock }
