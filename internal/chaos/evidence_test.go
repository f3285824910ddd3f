// Proves an Illegal verdict comes with evidence naming the operation
// porcupine could not place.
package chaos

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

func TestEvidence(t *testing.T) {
	h := []porcupine.Operation{
		grantOp(0, "A", 1), decideOp(10, 1, 1, "gA", "ACCEPTED"),
		releaseOp(30, "A", "ok", 35), grantOp(40, "B", 2), decideOp(50, 2, 1, "gB", "ACCEPTED"),
		decideOp(60, 1, 2, "gA", "ACCEPTED"),
	}
	ev := evidence(newModel(modelParams{lockDelayMs: lockDelayMs}), h)
	joined := strings.Join(ev, "\n")
	if len(ev) < 2 || !strings.Contains(joined, "X #5") || !strings.Contains(joined, "fence 1 seq 2 → ACCEPTED") {
		t.Errorf("evidence does not name the stale accept:\n%s", joined)
	}
}

// TestRecordedCancelWaitHistory: the first 9 s of resource chaos/res-3 in
// seed 4 of the first full run, as recorded. worker-08 is granted l8 and
// renews it; 1 ms after the renewal's answer, worker-12 is granted l9,
// because the registry released l8 when worker-08's first, abandoned
// attempt with the same request ID withdrew its ticket (see
// TestReproCancelWaitReleasesRetriedGrant). The checker must keep calling
// this history Illegal.
func TestRecordedCancelWaitHistory(t *testing.T) {
	h, err := LoadHistory("testdata/cancelwait")
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(modelParams{lockDelayMs: lockDelayMs})
	ops := h.Operations([]string{"chaos/res-3"})
	if porcupine.CheckOperations(m, ops) {
		t.Fatal("the recorded history with two holders is called linearizable")
	}
	if ev := strings.Join(evidence(m, ops), "\n"); !strings.Contains(ev, "X #24") || !strings.Contains(ev, "grant l9-aa646033 fence 9") {
		t.Errorf("evidence does not point at l9's grant:\n%s", ev)
	}
}
