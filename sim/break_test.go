// This file proves a gate clock beyond the skew bound is detected and
// reported, never silent, and that the gate alone holds where a client's
// own defence is off. Each count's negative control, a run with one
// protection off, is in sim/negative.
package sim

import "testing"

func only(rates map[Fault]float64) [faultCount]float64 {
	var r [faultCount]float64
	for f, v := range rates {
		r[f] = v
	}
	return r
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
