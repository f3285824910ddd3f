// Proves an Illegal verdict comes with evidence naming the operation
// porcupine could not place.
package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/chaos/record"
)

func TestEvidence(t *testing.T) {
	h := []porcupine.Operation{
		grantOp(0, "A", 1), decideOp(10, 1, 1, "gA", "ACCEPTED"),
		releaseOp(30, "A", "ok", 35), grantOp(40, "B", 2), decideOp(50, 2, 1, "gB", "ACCEPTED"),
		decideOp(60, 1, 2, "gA", "ACCEPTED"),
	}
	ev := evidence(modelFor(h), h)
	joined := strings.Join(ev, "\n")
	if len(ev) < 2 || !strings.Contains(joined, "X #2") || !strings.Contains(joined, "fence 1 seq 2 → ACCEPTED") {
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
	ops := h.Operations([]string{"chaos/res-3"})
	m := modelFor(ops)
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
	ops := h.Operations([]string{"chaos/res-1"})
	m := modelFor(ops)
	if porcupine.CheckOperations(m, ops) {
		t.Fatal("the recorded history with a fence granted twice after the repair is called linearizable")
	}
	var c Counts
	countRegistry(h, &c)
	if c.FenceReusedByRegistry == 0 {
		t.Errorf("no fence reused within one store history counted: %+v", c)
	}
}

// TestRecordedZooKeeperLossHistory: chaos seed 80 on ZooKeeper (main at
// 94a3069), every process's history as recorded. The store was restored
// at 28.3 s; at 40.4 s ZooKeeper lost the transactions of the seconds
// before (its members' elections truncated them: docs/guarantees.md, "On
// ZooKeeper"), and from 48.7 s the registry issued fences 31, 33, 38 and
// 39 again; the gates paused on them. The run recorded no regression
// (it had no watch of the store's history), so the checker must call the
// history Illegal and count the four fences reused within one history of
// the store. With the regression the watch records (WatchHistory: its
// last read of the earlier history during the outage, its first of the
// later one when the registry answered again), the same history is one
// a correct registry and gate produce: Ok, every count 0.
func TestRecordedZooKeeperLossHistory(t *testing.T) {
	rep, err := CheckHistory("testdata/zkloss80", "", 80, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ev := strings.Join(rep.Evidence, "\n")
	if rep.Verdict != porcupine.Illegal || rep.Counts.FenceReusedByRegistry != 4 || rep.Counts.SpuriousPauses != 3 {
		t.Errorf("as recorded: %s, counts %+v; want Illegal, 4 fences reused, 3 spurious pauses", rep.Verdict, rep.Counts)
	}
	for _, want := range []string{"chaos/res-1 registry", "grant l38-b6084591 fence 38", "chaos/res-2 registry", "grant l31-451fccef fence 31"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence does not name %q:\n%s", want, ev)
		}
	}
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/zkloss80/*.jsonl")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const start = 1796612641836541272 // the history's first call
	w, err := record.Create(filepath.Join(dir, "orchestrator.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w.Emit(record.Event{Kind: record.KindRegression, Proc: "orchestrator", CallNs: start + 41.0e9, RetNs: start + 48.6e9,
		Result: record.ResultOK, Detail: "the store went back (where the watch would have seen it)"})
	w.Close()
	rep, err = CheckHistory(dir, "", 80, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != porcupine.Ok || len(rep.Counts.Violations()) > 0 || rep.Counts.StoreWentBack != 1 || rep.Counts.ExpectedReissues != 8 {
		t.Errorf("with the regression: %s, counts %+v; want Ok, no violation, 1 regression, 8 expected reissues\n%s", rep.Verdict, rep.Counts, strings.Join(rep.Evidence, "\n"))
	}
}

// TestRecordedZooKeeperLogLossHistory: chaos seed 187 on ZooKeeper (h48
// before the checker read the members' logs), its history and the sync
// lines of its members' logs (testdata/zkloss187/README). ZooKeeper lost
// epoch 2, which lived about 270 ms (zxids 0x200000001-3, one of them
// worker-04's grant of fence 8 on chaos/res-2, answered at 06:13:32.558)
// between two reads of the watch, which recorded nothing; the registry
// granted fence 8 again 6.6 s later, before the restore. The run predates
// answers carrying their zxid: that one answer carries the epoch-2 zxid
// by hand, and the verdict needs only that it lies in what zk2's sync
// discarded, (0x1000000a5, 0x200000003]. With the members' logs the
// checker finds the loss and judges it as a regression: Ok, every count
// 0. Without them it must fail the run on the fence granted twice.
func TestRecordedZooKeeperLogLossHistory(t *testing.T) {
	rep, err := CheckHistory("testdata/zkloss187/events", "testdata/zkloss187/store", 187, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != porcupine.Ok || len(rep.Counts.Violations()) > 0 || rep.Counts.StoreWentBack != 1 {
		t.Errorf("with the members' logs: %s, counts %+v; want Ok, no violation, 1 regression\n%s", rep.Verdict, rep.Counts, strings.Join(rep.Evidence, "\n"))
	}
	rep, err = CheckHistory("testdata/zkloss187/events", "", 187, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != porcupine.Illegal || rep.Counts.FenceReusedByRegistry != 1 || rep.Counts.StoreWentBack != 0 {
		t.Errorf("without the members' logs: %s, counts %+v; want Illegal, 1 fence reused, no regression", rep.Verdict, rep.Counts)
	}
}

// TestRecordedRestoreAfterRepairHistory: chaos seed 212 on ZooKeeper (h48,
// the sweep of seeds 201-220). ZooKeeper lost its epoch 2 at 148 s (the
// watch recorded the regression; fences 6-8 were issued again and the
// orchestrator repaired every resource, raising the gates' policy
// generation to 1); at 155 s the restore put back the snapshot of 141 s,
// from before that repair. Every grant of the restored registry carried
// policy generation 0, so the gates refused each as POLICY_STALE until
// the restore's repair, and none saw a fence go back: the restore was
// caught without a pause. The checker must call the history Ok with every
// count 0; without the POLICY_STALE refusals it must count the restore as
// undetected.
func TestRecordedRestoreAfterRepairHistory(t *testing.T) {
	rep, err := CheckHistory("testdata/restore212/events", "", 212, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != porcupine.Ok || len(rep.Counts.Violations()) > 0 || rep.Counts.StoreWentBack != 1 {
		t.Errorf("as recorded: %s, counts %+v; want Ok, no violation, 1 regression\n%s", rep.Verdict, rep.Counts, strings.Join(rep.Evidence, "\n"))
	}
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/restore212/events/*.jsonl")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, `"kind":"decide"`) || !strings.Contains(l, `"result":"POLICY_STALE"`) {
				kept = append(kept, l)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = CheckHistory(dir, "", 212, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts.RestoresUndetected != 1 {
		t.Errorf("without the POLICY_STALE refusals: counts %+v; want the restore undetected", rep.Counts)
	}
}
