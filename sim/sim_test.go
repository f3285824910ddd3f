// This file proves a short run of the full fault matrix finds no
// violation, that one seed reproduces a run exactly, and that a round
// replays alone (the lease-only negative control is sim/negative's).
package sim

import (
	"testing"

	"github.com/fencegate/fencegate/grant"
)

// shortRounds is the CI run: every fault enabled.
const shortRounds = 2000

func run(t *testing.T, cfg Config) *Report {
	t.Helper()
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestShortRunAllFaults(t *testing.T) {
	r := run(t, Config{Rounds: shortRounds, Seed: 20260719, Rates: DefaultRates, Parallel: 2})
	if !r.OK() {
		for _, v := range r.Violations {
			t.Errorf("round %d %s: %s\n  %s", v.Round, v.Kind, v.Detail, v.Repro)
		}
	}
	if r.StaleDownstream != 0 || r.DuplicateEffects != 0 || r.JobsApplied == 0 {
		t.Errorf("downstream: %d stale and %d duplicate effects, %d jobs applied", r.StaleDownstream, r.DuplicateEffects, r.JobsApplied)
	}
	if r.SpuriousPauses != 0 || r.BlockedHandoffs != 0 || r.GhostWaiters != 0 || r.RegressionNotAlarmed != 0 || r.UnusableGrants != 0 {
		t.Errorf("availability: %d spurious pauses, %d blocked handoffs, %d ghost waiters, %d regressions not alarmed, %d unusable grants",
			r.SpuriousPauses, r.BlockedHandoffs, r.GhostWaiters, r.RegressionNotAlarmed, r.UnusableGrants)
	}
	if r.WritesApplied == 0 || r.Handoffs == 0 || r.RegressedGrants == 0 || r.Reconciles == 0 {
		t.Errorf("the run exercised too little: %d writes, %d handoffs, %d regressed grants, %d reconciles",
			r.WritesApplied, r.Handoffs, r.RegressedGrants, r.Reconciles)
	}
	for _, k := range attackNames {
		if r.Attacks[k][0] == 0 {
			t.Errorf("attack %s never sent", k)
		}
	}
}

func TestSameSeedSameRun(t *testing.T) {
	cfg := Config{Rounds: 300, Seed: 7, Rates: DefaultRates}
	a := run(t, cfg)
	cfg.Parallel = 2
	b := run(t, cfg)
	if a.EventLogDigest != b.EventLogDigest || a.Decisions != b.Decisions {
		t.Fatalf("same seed, different runs: digest %s vs %s, decisions %d vs %d", a.EventLogDigest, b.EventLogDigest, a.Decisions, b.Decisions)
	}
	cfg.Seed = 8
	if c := run(t, cfg); c.EventLogDigest == a.EventLogDigest {
		t.Fatalf("seeds 7 and 8 gave the same digest %s", a.EventLogDigest)
	}
}

func TestRoundReplaysAlone(t *testing.T) {
	cfg := Config{Rounds: 50, Seed: 11, Rates: DefaultRates}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	keys, err := newKeySet(cfg.Alg, cfg.skewBound())
	if err != nil {
		t.Fatal(err)
	}
	inRun := make([]*Counts, 0, cfg.Rounds)
	for r := 1; r <= cfg.Rounds; r++ {
		inRun = append(inRun, RunRound(&cfg, keys, r))
	}
	cfg.Round = 37
	alone := run(t, cfg)
	if want := inRun[36].Digest; alone.EventLogDigest != hex16(mixDigest(0, want)) {
		t.Fatalf("round 37 alone: digest %s, inside the run %s", alone.EventLogDigest, hex16(mixDigest(0, want)))
	}
}

// TestSQLModeAgreesWithFastMode runs the same seeds on gate/sqlgate over
// SQLite and on gate/memgate: the product's two adapters over one
// decision must give the same run, event for event.
func TestSQLModeAgreesWithFastMode(t *testing.T) {
	agreesWithFastMode(t, "SQL mode", func(c *Config) { c.SQL = true })
}

// TestObjectModeAgreesWithFastMode runs the same seeds on gate/objgate —
// two gates with their own manifest caches in front of one bucket — and
// on gate/memgate: the same decision must give the same run, event for
// event, however often a gate decides on a copy the other replaced.
func TestObjectModeAgreesWithFastMode(t *testing.T) {
	agreesWithFastMode(t, "object mode", func(c *Config) { c.Objects = true })
}

// agreesWithFastMode runs 300 rounds on gate/memgate and again in the
// mode set selects, and compares the two runs.
func agreesWithFastMode(t *testing.T, mode string, set func(*Config)) {
	cfg := Config{Rounds: 300, Seed: 17, Rates: DefaultRates, Parallel: 2}
	mem := run(t, cfg)
	set(&cfg)
	other := run(t, cfg)
	if other.EventLogDigest != mem.EventLogDigest || other.Decisions != mem.Decisions || !other.OK() {
		t.Fatalf("%s: digest %s, %d decisions, %d violations; fast mode: digest %s, %d decisions",
			mode, other.EventLogDigest, other.Decisions, other.ViolationsTotal, mem.EventLogDigest, mem.Decisions)
	}
}

func TestAlgorithmDoesNotChangeDecisions(t *testing.T) {
	cfg := Config{Rounds: 300, Seed: 5, Rates: DefaultRates, Alg: grant.AlgEd25519}
	ed := run(t, cfg)
	cfg.Alg = grant.AlgHMACSHA256
	mac := run(t, cfg)
	if ed.EventLogDigest != mac.EventLogDigest {
		t.Fatalf("Ed25519 digest %s, HMAC digest %s: the algorithm changed a decision", ed.EventLogDigest, mac.EventLogDigest)
	}
}

func TestSkewBoundIsConfigurable(t *testing.T) {
	for _, bound := range []int64{100, 900} {
		r := run(t, Config{Rounds: 500, Seed: 13, Rates: DefaultRates, SkewBoundMs: bound, SkewBeyondBound: true})
		if r.SkewBoundMs != bound || r.StaleAccepted != 0 || r.BeyondBound.Undetected != 0 || r.BeyondBound.Rounds == 0 {
			t.Errorf("bound %d ms: report bound %d, %d stale, beyond-bound %+v", bound, r.SkewBoundMs, r.StaleAccepted, r.BeyondBound)
		}
	}
}

// TestObjectModeUnderStoreFaults runs the object mode on a bucket that
// fails batch PUTs and loses the answers of manifest PUTs that landed:
// the faults must fire, and every count stay 0 (a receipt lost, or a
// committed write answered as anything but itself, is an adapter
// inconsistency).
func TestObjectModeUnderStoreFaults(t *testing.T) {
	r := run(t, Config{Rounds: 300, Seed: 23, Rates: DefaultRates, Parallel: 2, Objects: true, StoreFaults: true})
	if !r.OK() || r.StoreBatchFailed == 0 || r.StoreLost412 == 0 || r.StoreLostError == 0 {
		t.Fatalf("%d violations; faults: %d batch PUTs failed, %d answered 412, %d an error", r.ViolationsTotal, r.StoreBatchFailed, r.StoreLost412, r.StoreLostError)
	}
}
