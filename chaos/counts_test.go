// Proves the direct counts can fail: a pause with no unrepaired restore
// is spurious, one inside a restore's window is expected; a fence or a
// request ID answered by two grants in one store history is counted, and
// across a restore is not; a stale, doubled or unreceipted business row
// is counted.
package chaos

import (
	"testing"

	"github.com/fencegate/fencegate/chaos/record"
)

func TestCountPauses(t *testing.T) {
	fr := func(at int64, res string) record.Event {
		return record.Event{Kind: record.KindDecide, CallNs: at, RetNs: at + 1, Resource: res, Result: "FENCE_REGRESSION"}
	}
	h := &History{Events: []record.Event{
		fr(10, "r1"), // before any restore: spurious
		{Kind: record.KindRestore, CallNs: 100, RetNs: 200, Result: record.ResultOK},
		fr(300, "r1"), // expected
		{Kind: record.KindRepair, Resource: "r1", CallNs: 400, RetNs: 410, Result: record.ResultOK},
		fr(500, "r1"), // after r1's repair: spurious
		fr(600, "r2"), // r2 not repaired yet: expected
	}}
	var c Counts
	countPauses(h, &c)
	if c.SpuriousPauses != 2 || c.ExpectedPauses != 2 || c.RestoresUndetected != 0 {
		t.Errorf("counts %+v, want 2 spurious, 2 expected, 0 undetected", c)
	}
	var none Counts
	countPauses(&History{Events: []record.Event{{Kind: record.KindRestore, CallNs: 1, RetNs: 2, Result: record.ResultOK}}}, &none)
	if none.RestoresUndetected != 1 {
		t.Errorf("a restore with no pause: %+v", none)
	}
	grant := record.Event{Kind: record.KindAcquire, Result: record.ResultOK, GrantDigest: "gA", CallNs: 40, RetNs: 60}
	restore := record.Event{Kind: record.KindRestore, CallNs: 100, RetNs: 200, Result: record.ResultOK, SnapshotNs: 50}
	var forgot Counts
	countPauses(&History{Events: []record.Event{grant, restore}}, &forgot)
	if forgot.RestoresUndetected != 1 || forgot.RestoresForgotNothing != 0 {
		t.Errorf("a restore that forgot a grant answered after its snapshot, with no pause: %+v", forgot)
	}
	stale := record.Event{Kind: record.KindDecide, CallNs: 300, RetNs: 301, Resource: "r1", Result: "POLICY_STALE"}
	var refused Counts
	countPauses(&History{Events: []record.Event{grant, restore, stale}}, &refused)
	if refused.RestoresUndetected != 0 || refused.SpuriousPauses != 0 || refused.ExpectedPauses != 0 {
		t.Errorf("a restore whose grants a gate refused as POLICY_STALE (seed 212): %+v", refused)
	}
	stale.CallNs, stale.RetNs = 90, 91 // before the restore: not its detection
	var before Counts
	countPauses(&History{Events: []record.Event{grant, stale, restore}}, &before)
	if before.RestoresUndetected != 1 {
		t.Errorf("a POLICY_STALE before the restore detected it: %+v", before)
	}
	grant.RetNs = 45 // answered before the snapshot began: in it
	var nothing Counts
	countPauses(&History{Events: []record.Event{grant, restore}}, &nothing)
	if nothing.RestoresUndetected != 0 || nothing.RestoresForgotNothing != 1 {
		t.Errorf("a restore that forgot nothing: %+v", nothing)
	}
	if f := (&Report{Verdict: "Ok", RestoreExpected: true, Faults: map[string]int{FaultRestore: 1}, Counts: nothing}).Failures(true); len(f) != 0 {
		t.Errorf("a run whose restore forgot nothing fails: %v", f)
	}
}

func TestCountRegistry(t *testing.T) {
	g := func(issuedMs int64, owner, req string, fence uint64, digest string) record.Event {
		return record.Event{Kind: record.KindAcquire, Result: record.ResultOK, Resource: "r", Owner: owner, RequestID: req,
			Fence: fence, GrantDigest: digest, GrantIssuedMs: issuedMs}
	}
	restore := record.Event{Kind: record.KindRestore, CallNs: 100e6, RetNs: 200e6, Result: record.ResultOK}
	h := &History{Events: []record.Event{
		g(10, "w1", "q1", 1, "gA"), g(20, "w1", "q1", 1, "gA"), // the same grant answered twice: fine
		g(30, "w2", "q2", 2, "gB"), g(40, "w3", "q3", 2, "gC"), // one fence, two grants, one store history
		g(50, "w4", "q4", 3, "gD"), g(60, "w4", "q4", 4, "gE"), // one request ID, two grants
		restore,
		g(300, "w5", "q5", 3, "gF"), // fence 3 again after the restore: expected
	}}
	var c Counts
	countRegistry(h, &c)
	if c.FenceReusedByRegistry != 1 || c.RequestIDTwoGrants != 1 || c.ExpectedReissues != 1 {
		t.Errorf("counts %+v, want 1 fence reused, 1 request ID, 1 expected reissue", c)
	}
}

// TestCountRegistrySnapshot: across a restore, a fence answered before
// the restore's snapshot began was in the snapshot, and granting it again
// is a violation; one answered after it may have been forgotten.
func TestCountRegistrySnapshot(t *testing.T) {
	g := func(issuedMs int64, fence uint64, digest string) record.Event {
		return record.Event{Kind: record.KindAcquire, Result: record.ResultOK, Resource: "r", Owner: digest, RequestID: digest,
			Fence: fence, GrantDigest: digest, GrantIssuedMs: issuedMs, CallNs: issuedMs * 1e6, RetNs: (issuedMs + 5) * 1e6}
	}
	restore := record.Event{Kind: record.KindRestore, CallNs: 100e6, RetNs: 200e6, Result: record.ResultOK, SnapshotNs: 50e6}
	h := &History{Events: []record.Event{
		g(10, 1, "gA"), // answered at 15 ms, before the snapshot at 50 ms: in it
		g(60, 2, "gB"), // answered after the snapshot began: may be forgotten
		restore,
		g(300, 1, "gC"), // fence 1 again: the restored store held it
		g(310, 2, "gD"), // fence 2 again: expected
	}}
	var c Counts
	countRegistry(h, &c)
	if c.FenceReusedByRegistry != 1 || c.ExpectedReissues != 1 {
		t.Errorf("counts %+v, want 1 fence reused (held by the snapshot), 1 expected reissue", c)
	}
	restore.SnapshotNs = 0 // a regression, or an older history: nothing known of a snapshot
	h.Events[2] = restore
	c = Counts{}
	countRegistry(h, &c)
	if c.FenceReusedByRegistry != 0 || c.ExpectedReissues != 2 {
		t.Errorf("without the snapshot's instant: counts %+v, want 2 expected reissues", c)
	}
}

func TestCountEffects(t *testing.T) {
	eff := func(fence, seq uint64, grant, payload string) effect {
		return effect{resource: "r", fence: fence, seq: seq, grant: grant, payload: payload}
	}
	effects := []effect{
		eff(2, 1, "g2", "p1"), eff(1, 1, "g1", "p2"), // stale: fence 1 after 2
		eff(3, 1, "g3", "p3"), eff(3, 2, "g3x", "p4"), // fence 3 under two grants
		eff(4, 1, "g4", "p5"), eff(4, 1, "g4", "p5"), // applied twice
	}
	receipts := map[segKey]string{
		{"r", 2, 1}: "p1", {"r", 1, 1}: "p2", {"r", 3, 1}: "p3", {"r", 3, 2}: "p4",
		{"r", 4, 1}: "p5", {"r", 5, 1}: "p6", // a receipt with no business row
	}
	var c Counts
	countEffects(effects, receipts, false, nil, &c)
	if c.StaleAccepts != 1 || c.FenceReusedAtGate != 1 || c.EffectsWithoutReceipt != 1 || c.ReceiptsWithoutEffect != 1 {
		t.Errorf("counts %+v, want 1 stale, 1 fence reused, 1 doubled, 1 receipt without effect", c)
	}
	delete(receipts, segKey{"r", 2, 1})
	var d Counts
	countEffects(effects[:1], receipts, false, nil, &d)
	if d.EffectsWithoutReceipt != 1 {
		t.Errorf("a business row without its receipt: %+v", d)
	}
}
