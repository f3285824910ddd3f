// This file proves that a release answered before its commit, whose
// commit is then lost (the lost-release fault: registry.Config.ReleaseEarly
// on a store that fails), moves no safety property: the lease lives on to
// its TTL, the successor's fence is above it, and no count moves (the
// lease-only control in sim/negative shows what the fence stops there).
package sim

import (
	"bytes"
	"strings"
	"testing"
)

func TestLostReleaseIsSafe(t *testing.T) {
	var rates [faultCount]float64
	rates[FaultLostRelease], rates[FaultSkew], rates[FaultLateCopy] = 1, 1, 0.5
	var trace bytes.Buffer
	r := run(t, Config{Rounds: 300, Seed: 45, Rates: rates, Trace: &trace})
	for _, v := range r.Violations {
		t.Errorf("round %d %s: %s\n  %s", v.Round, v.Kind, v.Detail, v.Repro)
	}
	lost := strings.Count(trace.String(), "answered, its commit lost")
	if lost < 200 || r.Handoffs == 0 || r.WritesApplied == 0 {
		t.Fatalf("the run exercised too little: %d releases lost, %d handoffs, %d writes", lost, r.Handoffs, r.WritesApplied)
	}
	if r.BlockedHandoffs != 0 || r.GhostWaiters != 0 || r.SpuriousPauses != 0 {
		t.Errorf("availability: %d blocked handoffs, %d ghost waiters, %d spurious pauses", r.BlockedHandoffs, r.GhostWaiters, r.SpuriousPauses)
	}
	t.Logf("%d rounds, %d releases lost after their answer: %d handoffs, %d writes, 0 violations", r.Rounds, lost, r.Handoffs, r.WritesApplied)
}
