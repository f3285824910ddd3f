// This file proves each checker count can fail: with one protection off
// on purpose, the faults that protection answers make the matching count
// non-zero and the run report violations, while the same run with the
// protection on reports none — on gate/memgate, and for the lease-only
// control on the gate inside PostgreSQL too.
package negative_test

import (
	"os"
	"slices"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/sim"
	"github.com/fencegate/fencegate/sim/negative"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func run(t *testing.T, cfg sim.Config) *sim.Report {
	t.Helper()
	r, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// only is the rates of the named faults, every other fault off.
func only(rates map[sim.Fault]float64) [len(sim.DefaultRates)]float64 {
	var r [len(sim.DefaultRates)]float64
	for f, v := range rates {
		r[f] = v
	}
	return r
}

func control(t *testing.T, name string) *sim.Negative {
	t.Helper()
	n, err := negative.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBrokenProtectionIsCaught(t *testing.T) {
	cases := []struct {
		name, brk string
		rates     map[sim.Fault]float64
		count     func(*sim.Report) int
	}{
		{"lease-only stale", "fence", map[sim.Fault]float64{sim.FaultPause: 1, sim.FaultSkew: 1}, func(r *sim.Report) int { return r.StaleAccepted }},
		{"no auth forged", "auth", map[sim.Fault]float64{sim.FaultAdversary: 1}, func(r *sim.Report) int { return r.ForgedAccepted }},
		{"rejection raises the fence", "pollute", map[sim.Fault]float64{sim.FaultReorder: 1, sim.FaultLostAck: 1}, func(r *sim.Report) int { return r.HighestFencePolluted }},
		{"no segment order", "segments", map[sim.Fault]float64{sim.FaultReorder: 1}, func(r *sim.Report) int { return r.SegmentSkipAccepted }},
		{"regression let through", "regression", map[sim.Fault]float64{sim.FaultRestore: 1}, func(r *sim.Report) int { return r.RegressionAccepted + r.StaleAccepted }},
		{"old rule pauses on late copies", "old-rule", map[sim.Fault]float64{sim.FaultLateCopy: 1, sim.FaultGateLag: 1}, func(r *sim.Report) int { return min(r.SpuriousPauses, r.BlockedHandoffs) }},
		{"regression refused silently", "no-alarm", map[sim.Fault]float64{sim.FaultRestore: 1}, func(r *sim.Report) int { return r.RegressionNotAlarmed }},
		{"lease counted from the first send", "first-send", map[sim.Fault]float64{sim.FaultLongHold: 1}, func(r *sim.Report) int { return r.UnusableGrants }},
		{"downstream without a gate", "hop", map[sim.Fault]float64{sim.FaultPause: 1, sim.FaultDuplicate: 1, sim.FaultLate: 1}, func(r *sim.Report) int { return min(r.StaleDownstream, r.DuplicateEffects) }},
		{"store compares revisions only", "content-compare", map[sim.Fault]float64{sim.FaultRestore: 1}, func(r *sim.Report) int { return r.LostUpdates }},
	}
	tested := []string{"lease-clock", "batch-path", "stale-read", "set-split", "multilock", "no-poll", // TestLeaseClockBreakIsCaughtAtShortTTLs, TestBatchPathBreakIsCaught, TestSemaphoreBreaksAreCaught, TestLockSetBreaksAreCaught
		"read-grant", "two-step-downgrade", "no-wake", "no-hold-back", "shared-read-lease", "readers-first", "forget-downgrade"} // TestRWLockBreaksAreCaught
	for _, tc := range cases {
		tested = append(tested, tc.brk)
		t.Run(tc.name, func(t *testing.T) {
			rates := only(tc.rates)
			fixed := run(t, sim.Config{Rounds: 300, Seed: 3, Rates: rates})
			if !fixed.OK() || tc.count(fixed) != 0 {
				t.Fatalf("with the protection on: count %d, %d violations", tc.count(fixed), fixed.ViolationsTotal)
			}
			broken := run(t, sim.Config{Rounds: 300, Seed: 3, Rates: rates, Negative: control(t, tc.brk)})
			if tc.count(broken) == 0 || broken.OK() {
				t.Fatalf("protection %s off: count %d, %d violations: the checker cannot fail", tc.brk, tc.count(broken), broken.ViolationsTotal)
			}
		})
	}
	slices.Sort(tested)
	if want := slices.Sorted(slices.Values(negative.Names())); !slices.Equal(tested, want) {
		t.Errorf("controls tested %v, want every one of %v", tested, want)
	}
}

// TestLeaseClockBreakIsCaughtAtShortTTLs restores the lease clock as it
// was before issue 42 (--break lease-clock: renewals at a share of the
// TTL, no look at the deadline while a call is in flight, the state as
// last stepped, no TTL refused): the checker must count leases reporting
// HELD past their local deadline and effects started after it, both at
// TTLs below 3 s; the product's clock must give none.
func TestLeaseClockBreakIsCaughtAtShortTTLs(t *testing.T) {
	cfg := sim.Config{Rounds: 1500, Seed: 3, Rates: sim.DefaultRates, Parallel: 2}
	fixed := run(t, cfg)
	if !fixed.OK() || fixed.HeldPastDeadline != 0 || fixed.EffectsPastDeadline != 0 || fixed.TTLRefused == 0 {
		t.Fatalf("the product's clock: %d held past the deadline, %d effects after it, %d violations, %d TTLs refused",
			fixed.HeldPastDeadline, fixed.EffectsPastDeadline, fixed.ViolationsTotal, fixed.TTLRefused)
	}
	cfg.Negative = control(t, "lease-clock")
	broken := run(t, cfg)
	if broken.HeldPastDeadlineShort == 0 || broken.EffectsPastDeadlineShort == 0 || broken.OK() {
		t.Fatalf("the clock before issue 42: %d held past the deadline (%d below 3 s), %d effects after it (%d below 3 s): the checker cannot fail",
			broken.HeldPastDeadline, broken.HeldPastDeadlineShort, broken.EffectsPastDeadline, broken.EffectsPastDeadlineShort)
	}
	t.Logf("caught: %d held past the deadline (%d below 3 s), %d effects after it (%d below 3 s)",
		broken.HeldPastDeadline, broken.HeldPastDeadlineShort, broken.EffectsPastDeadline, broken.EffectsPastDeadlineShort)
}

func TestUnsafeNegativeControl(t *testing.T) {
	r := run(t, sim.Config{Rounds: 2000, Seed: 20260719, Rates: sim.DefaultRates, Negative: control(t, "fence"), Parallel: 2})
	if r.StaleAccepted == 0 {
		t.Fatalf("lease-only protection reported no stale write in %d rounds: the checker cannot fail", r.Rounds)
	}
	if r.OK() {
		t.Fatal("unsafe run reported no violation")
	}
	if r.ProtectedCoveragePct >= 100 {
		t.Errorf("lease-only coverage %.1f%%, want below 100: writes the gate would refuse went through", r.ProtectedCoveragePct)
	}
	t.Logf("unsafe: %d stale (%d not holder, %d below a higher fence), %d forged accepted",
		r.StaleAccepted, r.StaleNotHolder, r.StaleAfterHigherFence, r.ForgedAccepted)
}

// TestPGModeSeesStaleWrites is the negative control: with the fence check
// off (the resources in shadow mode, --unsafe) the PostgreSQL mode lets
// stale writes through and the checker counts them, as in the fast mode.
func TestPGModeSeesStaleWrites(t *testing.T) {
	dsn := pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off")
	cfg := sim.Config{Rounds: 100, Seed: 4, Rates: sim.DefaultRates, Parallel: 2, Negative: control(t, "fence")}
	mem := run(t, cfg)
	cfg.PG, cfg.PGDSN = true, dsn
	pg := run(t, cfg)
	if pg.StaleAccepted == 0 || pg.StaleAccepted != mem.StaleAccepted || pg.EventLogDigest != mem.EventLogDigest {
		t.Fatalf("unsafe PG mode: %d stale accepted, digest %s; fast mode: %d, %s",
			pg.StaleAccepted, pg.EventLogDigest, mem.StaleAccepted, mem.EventLogDigest)
	}
}

// TestBatchPathBreakIsCaught: with Ed25519 keys (batch proofs are
// Ed25519 only; the simulator's default is HMAC) half the replicas sign
// batch proofs, and a gate that takes a batch signature it verified once
// without the path accepts the adversary's spliced and tampered grants.
func TestBatchPathBreakIsCaught(t *testing.T) {
	cfg := sim.Config{Rounds: 300, Seed: 3, Rates: only(map[sim.Fault]float64{sim.FaultAdversary: 1}), Alg: grant.AlgEd25519}
	if fixed := run(t, cfg); !fixed.OK() || fixed.ForgedAccepted != 0 {
		t.Fatalf("with the protection on: %d forged accepted, %d violations", fixed.ForgedAccepted, fixed.ViolationsTotal)
	}
	cfg.Negative = control(t, "batch-path")
	broken := run(t, cfg)
	if broken.ForgedAccepted == 0 || broken.OK() {
		t.Fatalf("batch paths unchecked: %d forged accepted, %d violations: the checker cannot fail", broken.ForgedAccepted, broken.ViolationsTotal)
	}
	t.Logf("batch paths unchecked: %d forged accepted (batch-splice %v, tampered-grant %v: accepted/sent)",
		broken.ForgedAccepted, broken.Attacks["batch-splice"], broken.Attacks["tampered-grant"])
}
