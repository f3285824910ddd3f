// This file is the negative control of the lost-release fault (a release
// answered before its commit, the commit then lost): with the fence off
// (--break fence, a lease alone), the rounds whose releases are lost count
// stale writes, so sim's TestLostReleaseIsSafe, which counts none with
// the fence on, could fail.
package negative_test

import (
	"testing"

	"github.com/fencegate/fencegate/sim"
)

func TestLostReleaseWithoutTheFenceIsCaught(t *testing.T) {
	rates := only(map[sim.Fault]float64{sim.FaultLostRelease: 1, sim.FaultSkew: 1, sim.FaultLateCopy: 0.5})
	fixed := run(t, sim.Config{Rounds: 300, Seed: 45, Rates: rates})
	if !fixed.OK() || fixed.StaleAccepted != 0 {
		t.Fatalf("with the fence: %d stale, %d violations", fixed.StaleAccepted, fixed.ViolationsTotal)
	}
	broken := run(t, sim.Config{Rounds: 300, Seed: 45, Rates: rates, Negative: control(t, "fence")})
	if broken.StaleAccepted == 0 || broken.OK() {
		t.Fatalf("lost releases with a lease alone: %d stale, %d violations: the checker cannot fail", broken.StaleAccepted, broken.ViolationsTotal)
	}
	t.Logf("lease alone: %d stale writes accepted (%d below a higher fence)", broken.StaleAccepted, broken.StaleAfterHigherFence)
}
