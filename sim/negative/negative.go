// Package negative builds the simulator's negative controls: runs with
// one protection off on purpose, each to show that the checker catches
// what that protection stops (sim/negative's tests; by hand with
// `go run ./sim/cmd/simbreak --break NAME`). None changes product code.
// Where the protection is a configuration a deployment could get wrong,
// the control says so and the simulator sets the product up that way:
//
//   - fence (--unsafe): every resource in shadow mode, so the gate
//     decides and records and every write lands — a lease alone;
//   - auth: a trust bundle that trusts every key, the attacker's too;
//   - hop: a downstream worker that applies every job it is handed, with
//     no gate at its target;
//   - multilock: the lock-set rounds' workers taking a set's members one
//     by one with plain acquires in the order they name them, as the
//     peers' MultiLock recipes do (a waiter holding members, deadlocks);
//   - no-poll: the lock-set rounds' waiters stepped only when a member's
//     record is written, never at their WakeAt (sets stuck with every
//     member free), and the read/write lock rounds' waiters alike;
//   - two-step-downgrade: the read/write lock rounds' workers downgrading
//     as a release then a read acquire, as Curator's recipe did (a
//     writer granted inside the downgrade);
//   - no-wake: the read/write lock rounds' waiters stepped only when
//     their lock's record is written, not even at their own deadline
//     (waits left unanswered).
//
// Where the protection is a product part, the control replaces it from
// outside with a function of its own:
//
//   - pollute, segments, regression, old-rule, no-alarm: gate.Decide,
//     replaced through gate/gatebreak by a wrapper that calls it on a
//     doctored input or doctors its output (a rejection that raises
//     highestFence; segment order ignored; a regressed holder let
//     through; the regression rule before issue 12; a regression refused
//     without an alarm);
//   - batch-path: the gate's proof check, replaced through
//     gate/gatebreak by one that takes a batch proof whose signature
//     verified once without folding its path (a root cache keyed by the
//     signature alone);
//   - first-send: a lease counting its TTL from its acquire's first
//     send, the client's rule before Issued.ExpiresAfterMs;
//   - content-compare: the registry's store comparing revisions only,
//     not the contents each write was decided on;
//   - stale-read: the registry's store reading a write behind and
//     comparing nothing (caught by the semaphore rounds: a slot granted
//     twice, more than N holders; and by the lock-set rounds: a member
//     granted twice);
//   - set-split: the registry's store applying a lock set's write member
//     by member, one commit each (caught by the lock-set rounds: a set
//     granted or held in part);
//   - read-grant: the gate's READ_GRANT check, turned off through
//     gate/gatebreak (caught by the read/write lock rounds: a reader's
//     grant accepted as a mutation);
//   - no-hold-back, shared-read-lease, readers-first: the registry's
//     store rewriting every record it commits — without a downgrade's
//     ReadersFromMs (a reader admitted while the write lease's
//     statements are valid), with every reader at the latest reader
//     expiry (a dead reader's share past its own TTL), with readers'
//     tickets ahead of writers' (a reader admitted past a queued
//     writer); each caught by the read/write lock rounds;
//   - forget-downgrade: the registry's store dropping the request entry
//     a downgrade writes (a retried downgrade answered with another
//     grant, or refused);
//   - lease-clock: the lease clock before issue 42, as a driver saw it:
//     renewals at a share of the TTL rather than of the local life, no
//     look at the lease while a call is in flight, the state as the
//     machine last stepped it, and no TTL refused below the client's
//     margins.
//
// This package and gate/gatebreak are linked by nothing but
// sim/cmd/simbreak and tests (imports_test.go at the root): the fencegate
// binary's `sim` runs the product as it ships.
package negative

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatebreak"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/sim"
)

// controls are the negative controls by name, in the order Names lists.
var controls = []struct {
	name  string
	build func() *sim.Negative
}{
	{"fence", func() *sim.Negative { return &sim.Negative{Shadow: true} }},
	{"auth", func() *sim.Negative { return &sim.Negative{TrustEveryKey: true} }},
	{"pollute", decision(decidePolluting)},
	{"segments", decision(decideIgnoringSegments)},
	{"regression", decision(decideTrustingRegistry)},
	{"old-rule", decision(decideOldRule)},
	{"no-alarm", decision(decideSilently)},
	{"hop", func() *sim.Negative { return &sim.Negative{UngatedJobs: true} }},
	{"first-send", func() *sim.Negative { return &sim.Negative{MemgateOnly: true, LeaseFrom: fromFirstSend} }},
	{"content-compare", func() *sim.Negative { return &sim.Negative{Store: revisionsOnlyStore} }},
	{"lease-clock", leaseClockBefore42},
	{"batch-path", batchPathSkipped},
	{"stale-read", func() *sim.Negative { return &sim.Negative{Store: staleReadStore} }},
	{"set-split", func() *sim.Negative { return &sim.Negative{Store: setSplitStore} }},
	{"multilock", func() *sim.Negative { return &sim.Negative{MultiLock: true} }},
	{"no-poll", func() *sim.Negative { return &sim.Negative{NoPoll: true} }},
	{"read-grant", func() *sim.Negative {
		return &sim.Negative{MemgateOnly: true, Policy: gatebreak.AcceptReaderGrants}
	}},
	{"two-step-downgrade", func() *sim.Negative { return &sim.Negative{TwoStepDowngrade: true} }},
	{"no-wake", func() *sim.Negative { return &sim.Negative{NoWake: true} }},
	{"no-hold-back", func() *sim.Negative { return &sim.Negative{Store: noHoldBackStore} }},
	{"shared-read-lease", func() *sim.Negative { return &sim.Negative{Store: sharedReadLeaseStore} }},
	{"readers-first", func() *sim.Negative { return &sim.Negative{Store: readersFirstStore} }},
	{"forget-downgrade", func() *sim.Negative { return &sim.Negative{Store: forgetDowngradeStore} }},
}

// Names lists every negative control's name, in a fixed order; "fence"
// is the one `--unsafe` names.
func Names() []string {
	names := make([]string, len(controls))
	for i, c := range controls {
		names[i] = c.name
	}
	return names
}

// ByName returns the negative control called name, one of Names, for
// sim.Config.Negative.
func ByName(name string) (*sim.Negative, error) {
	for _, c := range controls {
		if c.name == name {
			n := c.build()
			n.Name = name
			return n, nil
		}
	}
	return nil, fmt.Errorf("sim/negative: unknown protection %q (%s)", name, strings.Join(Names(), ", "))
}

// decision is a control that replaces gate.Decide with d. It runs on
// gate/memgate only: another adapter's own checks may refuse what d lets
// through.
func decision(d func(gate.Input) gate.Decision) func() *sim.Negative {
	return func() *sim.Negative {
		return &sim.Negative{MemgateOnly: true, Policy: func(p gate.Policy) gate.Policy { return gatebreak.Replace(p, d) }}
	}
}

// fromFirstSend counts a lease from its acquire's first send: the rule
// before the registry measured the wait (Issued.ExpiresAfterMs), which
// left grants after long waits unusable.
func fromFirstSend(a *core.Acquire, _ core.AcquireReady) time.Time { return a.View().FirstSent }

// leaseClockBefore42 is the lease clock before issue 42, restored from
// outside the client's core: the core's RenewFraction scaled by
// TTL / (TTL − ExpiryMargin) for each lease, so that renewals fall at a
// share of the TTL; no wake while a call is in flight (the core then
// named no instant); the state as last stepped (core.LeaseView.Certain,
// not CertainAt); and no TTL refused.
func leaseClockBefore42() *sim.Negative {
	return &sim.Negative{
		CheckTTL: func(core.Limits, time.Duration) error { return nil },
		LeaseLimits: func(o core.Limits, ttl time.Duration) core.Limits {
			if life := o.Life(ttl); life > 0 {
				o.RenewFraction *= float64(ttl) / float64(life)
			}
			return o
		},
		ReportsCertain: func(v core.LeaseView, _ time.Time) bool { return v.Certain() },
		NoWakeInFlight: true,
	}
}

func revisionsOnlyStore(s registry.Store) registry.Store { return revisionsOnly{s} }

// batchPathSkipped is the batch-path control: a gate that, once a batch
// signature has verified, accepts any message sent with it, path and
// index unchecked.
func batchPathSkipped() *sim.Negative {
	return &sim.Negative{MemgateOnly: true, Policy: func(p gate.Policy) gate.Policy {
		v, seen := p.Verifier, map[string]bool{}
		return gatebreak.ReplaceVerify(p, func(schema string, d grant.Digest, epoch uint64, proof string) error {
			bp, err := grant.ParseBatchProof(proof)
			if err == nil && seen[string(bp.Signature)] {
				return nil
			}
			verr := v.VerifyDigest(schema, d, epoch, proof)
			if verr == nil && err == nil {
				seen[string(bp.Signature)] = true
			}
			return verr
		})
	}}
}
