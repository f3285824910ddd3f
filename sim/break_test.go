// This file proves each checker count can fail: with one protection
// disabled on purpose, the faults that protection answers make the
// matching count non-zero (and the run report violations), the lease
// clock before issue 42 is caught at short TTLs, and a gate clock beyond
// the skew bound is detected and reported, never silent.
package sim

import "testing"

func only(rates map[Fault]float64) [faultCount]float64 {
	var r [faultCount]float64
	for f, v := range rates {
		r[f] = v
	}
	return r
}

func TestBrokenProtectionIsCaught(t *testing.T) {
	for _, tc := range []struct {
		name  string
		brk   Break
		rates map[Fault]float64
		count func(*Report) int
	}{
		{"lease-only stale", BreakFence, map[Fault]float64{FaultPause: 1, FaultSkew: 1}, func(r *Report) int { return r.StaleAccepted }},
		{"no auth forged", BreakAuth, map[Fault]float64{FaultAdversary: 1}, func(r *Report) int { return r.ForgedAccepted }},
		{"rejection raises the fence", BreakPollution, map[Fault]float64{FaultReorder: 1, FaultLostAck: 1}, func(r *Report) int { return r.HighestFencePolluted }},
		{"no segment order", BreakSegments, map[Fault]float64{FaultReorder: 1}, func(r *Report) int { return r.SegmentSkipAccepted }},
		{"regression let through", BreakRegression, map[Fault]float64{FaultRestore: 1}, func(r *Report) int { return r.RegressionAccepted + r.StaleAccepted }},
		{"old rule pauses on late copies", BreakOldRule, map[Fault]float64{FaultLateCopy: 1, FaultGateLag: 1}, func(r *Report) int { return min(r.SpuriousPauses, r.BlockedHandoffs) }},
		{"regression refused silently", BreakNoAlarm, map[Fault]float64{FaultRestore: 1}, func(r *Report) int { return r.RegressionNotAlarmed }},
		{"lease counted from the first send", BreakFirstSend, map[Fault]float64{FaultLongHold: 1}, func(r *Report) int { return r.UnusableGrants }},
		{"downstream without a gate", BreakHop, map[Fault]float64{FaultPause: 1, FaultDuplicate: 1, FaultLate: 1}, func(r *Report) int { return min(r.StaleDownstream, r.DuplicateEffects) }},
		{"store compares revisions only", BreakContentCompare, map[Fault]float64{FaultRestore: 1}, func(r *Report) int { return r.LostUpdates }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rates := only(tc.rates)
			fixed := run(t, Config{Rounds: 300, Seed: 3, Rates: rates})
			if !fixed.OK() || tc.count(fixed) != 0 {
				t.Fatalf("with the protection on: count %d, %d violations", tc.count(fixed), fixed.ViolationsTotal)
			}
			broken := run(t, Config{Rounds: 300, Seed: 3, Rates: rates, Break: tc.brk})
			if tc.count(broken) == 0 || broken.OK() {
				t.Fatalf("protection %s off: count %d, %d violations: the checker cannot fail", breakName(tc.brk), tc.count(broken), broken.ViolationsTotal)
			}
		})
	}
}

// TestLeaseClockBreakIsCaughtAtShortTTLs restores the lease clock as it
// was before issue 42 (--break lease-clock: renewals at a share of the
// TTL, no look at the deadline while a call is in flight, the state as
// last stepped, no TTL refused): the checker must count leases reporting
// HELD past their local deadline and effects started after it, both at
// TTLs below 3 s; the product's clock must give none.
func TestLeaseClockBreakIsCaughtAtShortTTLs(t *testing.T) {
	cfg := Config{Rounds: 1500, Seed: 3, Rates: DefaultRates, Parallel: 2}
	fixed := run(t, cfg)
	if !fixed.OK() || fixed.HeldPastDeadline != 0 || fixed.EffectsPastDeadline != 0 || fixed.TTLRefused == 0 {
		t.Fatalf("the product's clock: %d held past the deadline, %d effects after it, %d violations, %d TTLs refused",
			fixed.HeldPastDeadline, fixed.EffectsPastDeadline, fixed.ViolationsTotal, fixed.TTLRefused)
	}
	cfg.Break = BreakLeaseClock
	broken := run(t, cfg)
	if broken.HeldPastDeadlineShort == 0 || broken.EffectsPastDeadlineShort == 0 || broken.OK() {
		t.Fatalf("the clock before issue 42: %d held past the deadline (%d below 3 s), %d effects after it (%d below 3 s): the checker cannot fail",
			broken.HeldPastDeadline, broken.HeldPastDeadlineShort, broken.EffectsPastDeadline, broken.EffectsPastDeadlineShort)
	}
	t.Logf("caught: %d held past the deadline (%d below 3 s), %d effects after it (%d below 3 s)",
		broken.HeldPastDeadline, broken.HeldPastDeadlineShort, broken.EffectsPastDeadline, broken.EffectsPastDeadlineShort)
}

func TestClockBeyondBoundIsDetected(t *testing.T) {
	r := run(t, Config{Rounds: 500, Seed: 9, Rates: only(map[Fault]float64{FaultPause: 1, FaultAdversary: 1}), SkewBeyondBound: true})
	b := r.BeyondBound
	if b.Rounds == 0 || b.Slipped == 0 {
		t.Fatalf("beyond-bound rounds %d, slipped %d: the lagging clock had no effect to report", b.Rounds, b.Slipped)
	}
	if b.Detected == 0 || b.Undetected != 0 {
		t.Fatalf("lag detected in %d of %d rounds, %d slips undetected", b.Detected, b.Rounds, b.Undetected)
	}
	if r.StaleAfterHigherFence != 0 || r.HighestFencePolluted != 0 || r.SegmentSkipAccepted != 0 {
		t.Fatalf("beyond the clock bound the fence must still order writes: %+v", r)
	}
	t.Logf("beyond bound: %d rounds, lag detected in %d, %d writes slipped (none undetected)", b.Rounds, b.Detected, b.Slipped)
}

// TestGateRefusesReissuedGrantSameFenceAndRoot pins a gap the simulator
// found and the gate has since closed. A worker crashes holding fence f;
// the registry's store is restored from a snapshot taken before that grant;
// the worker restarts and retries its journalled request ID; the registry,
// which forgot the request, grants it again: a different grant with the
// same fence f and the same operation root. The gate used to compare
// (fence, root, segment, payload) but not the grant digest, so the new
// grant's first segments came back REPLAYED and the next one ACCEPTED
// under a re-issued fence. Now a receipt of another grant at the same
// fence, proven HELD, is FENCE_REGRESSION. NaiveRecovery turns off the
// workers' own defence (abandoning an operation whose request ID comes
// back with another grant), so only the gate stands in the way.
func TestGateRefusesReissuedGrantSameFenceAndRoot(t *testing.T) {
	cfg := Config{Rounds: 3000, Seed: 20260719, Rates: only(map[Fault]float64{FaultRestore: 1, FaultCrash: 1, FaultSkew: 1}), Parallel: 2}
	if r := run(t, cfg); !r.OK() || r.ClientSawForgottenRequest == 0 {
		t.Fatalf("careful recovery: %d violations, %d forgotten requests seen", r.ViolationsTotal, r.ClientSawForgottenRequest)
	}
	cfg.NaiveRecovery = true
	r := run(t, cfg)
	if r.RegressionAccepted != 0 || !r.OK() {
		t.Fatalf("naive recovery: %d accepts under a re-issued fence, %d violations", r.RegressionAccepted, r.ViolationsTotal)
	}
}

func TestStatusQueryClosesTheClockGap(t *testing.T) {
	r := run(t, Config{Rounds: 500, Seed: 9, Rates: only(map[Fault]float64{FaultPause: 1, FaultAdversary: 1}), SkewBeyondBound: true, StatusQuery: true})
	if b := r.BeyondBound; b.Rounds == 0 || b.Slipped != 0 || !r.OK() {
		t.Fatalf("with linearizable status queries a lagging gate clock must not matter: %+v, %d violations", b, r.ViolationsTotal)
	}
}
