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

// TestRecordedStaleCacheHistory: resource chaos/res-1 from 20 s to 53 s of
// seed 8 of the second full run, as recorded. The registry was restored
// at 25.7 s, repaired (floor 42, policy generation 1) at 29.7 s and
// granted fences up to 62; after a leader loss, at 50.9 s, it granted
// fence 42 again, with policy generation 0: the state of the record
// before the restore, which a serve replica still had cached at a higher
// revision than the restored store's (the gate refused every such grant:
// POLICY_STALE). The checker must call the fence that went back Illegal.
func TestRecordedStaleCacheHistory(t *testing.T) {
	h, err := LoadHistory("testdata/stalecache")
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(modelParams{lockDelayMs: lockDelayMs})
	ops := h.Operations([]string{"chaos/res-1"})
	if porcupine.CheckOperations(m, ops) {
		t.Fatal("the recorded history with a fence granted twice after the repair is called linearizable")
	}
	var c Counts
	countRegistry(h, &c)
	if c.FenceReusedByRegistry == 0 {
		t.Errorf("no fence reused within one store history counted: %+v", c)
	}
}
