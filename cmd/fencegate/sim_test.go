// Tests the sim subcommand: a short run passes with exit 0 and prints the
// JSON fields the issue names; the negative controls are refused with
// their new home (sim/cmd/simbreak); a round replays with a trace.
package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSimJSON(t *testing.T) {
	out := mustRun(t, "sim", "--rounds", "300", "--seed", "42", "--json")
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"rounds", "seed", "staleAccepted", "forgedAccepted", "highestFencePolluted",
		"segmentSkipAccepted", "regressionAccepted", "protectedCoveragePct", "handoffP99Ms", "handoffBudgetMs",
		"unknownReconcileMaxS", "roundsPerSecond", "violations"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	if rep["rounds"].(float64) != 300 || rep["seed"].(float64) != 42 {
		t.Errorf("rounds %v seed %v, want 300 and 42", rep["rounds"], rep["seed"])
	}
}

func TestSimHasNoNegativeControls(t *testing.T) {
	for _, args := range [][]string{{"--unsafe"}, {"--break", "pollute"}} {
		out, code := fencegate(t, append([]string{"sim", "--rounds", "10"}, args...)...)
		if code != 2 || !strings.Contains(out, "go run ./sim/cmd/simbreak") {
			t.Errorf("sim %v: exit %d, want 2 and the controls' new home\n%s", args, code, out)
		}
	}
}

func TestSimReplayRound(t *testing.T) {
	out := mustRun(t, "sim", "--rounds", "100", "--seed", "42", "--round", "7", "--trace")
	if !strings.Contains(out, "HELD fence 1") || !strings.Contains(out, "1 rounds") {
		t.Fatalf("replay of round 7 printed no trace:\n%s", out)
	}
}
