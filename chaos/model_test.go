// Proves the chaos checker can fail: the porcupine model accepts
// histories a correct registry and gate produce (with lost answers and a
// restore) and flags a stale accept, a second holder, a fence that did
// not rise, an accept while paused and a renewal of a replaced lease.
package chaos

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// hop builds one operation at [call, ret] (ms, turned into ns).
func hop(call, ret int64, in opInput) porcupine.Operation {
	if in.resource == "" {
		in.resource = "r"
	}
	in.callMs = call
	return porcupine.Operation{Input: in, Call: call * 1e6, Return: ret * 1e6}
}

func grantOp(call int64, lease string, fence uint64) porcupine.Operation {
	return hop(call, call+5, opInput{kind: opGrant, lease: lease, fence: fence, issuedMs: call + 1, expiresMs: call + 1 + 3000})
}

func decideOp(call int64, fence, seq uint64, grant, outcome string) porcupine.Operation {
	return hop(call, call+5, opInput{kind: opDecide, fence: fence, seq: seq, grant: grant, outcome: outcome})
}

func releaseOp(call int64, lease, outcome string, ret int64) porcupine.Operation {
	return hop(call, ret, opInput{kind: opRelease, lease: lease, outcome: outcome})
}

func TestModel(t *testing.T) {
	base := []porcupine.Operation{
		grantOp(0, "A", 1), decideOp(10, 1, 1, "gA", "ACCEPTED"), decideOp(20, 1, 2, "gA", "ACCEPTED"),
		releaseOp(30, "A", "ok", 35), grantOp(40, "B", 2), decideOp(50, 2, 1, "gB", "ACCEPTED"),
	}
	with := func(ops ...porcupine.Operation) []porcupine.Operation {
		return append(append([]porcupine.Operation{}, base...), ops...)
	}
	for _, c := range []struct {
		name string
		h    []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"handoff then a stale write rejected", with(decideOp(60, 1, 3, "gA", "STALE_OWNER")), porcupine.Ok},
		{"a late copy replayed", with(decideOp(60, 1, 2, "gA", "REPLAYED")), porcupine.Ok},
		{"stale accept", with(decideOp(60, 1, 3, "gA", "ACCEPTED")), porcupine.Illegal},
		{"segment skipped and accepted", with(decideOp(60, 2, 3, "gB", "ACCEPTED")), porcupine.Illegal},
		{"another grant at the highest fence accepted", with(decideOp(60, 2, 2, "gX", "ACCEPTED")), porcupine.Illegal},
		{"fence did not rise", with(grantOp(4000, "C", 2)), porcupine.Illegal},
		{"second holder before expiry", with(grantOp(100, "C", 3)), porcupine.Illegal},
		{"next holder after expiry and lock-delay", with(grantOp(4100, "C", 3)), porcupine.Ok},
		{"renewal of a replaced lease", with(hop(60, 65, opInput{kind: opRenew, lease: "A", outcome: "ok", ttlMs: 3000})), porcupine.Illegal},
		{"HELD about a replaced lease", with(hop(60, 65, opInput{kind: opStatus, lease: "A"})), porcupine.Illegal},
		{"accept while paused", with(decideOp(60, 1, 3, "gA", "FENCE_REGRESSION"), decideOp(70, 3, 1, "gC", "ACCEPTED")), porcupine.Illegal},
		{"paused, resumed, accepted above the floor", with(decideOp(60, 1, 3, "gA", "FENCE_REGRESSION"), decideOp(70, 3, 1, "gC", "RESOURCE_PAUSED"),
			hop(80, 90, opInput{kind: opResume, floor: 3}), decideOp(100, 4, 1, "gD", "ACCEPTED")), porcupine.Ok},
		{"accepted at the floor after a resume", with(decideOp(60, 1, 3, "gA", "FENCE_REGRESSION"),
			hop(80, 90, opInput{kind: opResume, floor: 3}), decideOp(100, 3, 1, "gD", "ACCEPTED")), porcupine.Illegal},
		{"restore: a fence handed out again is legal at the registry, never accepted",
			with(hop(60, 70, opInput{kind: opRestore}), grantOp(80, "C", 2), decideOp(90, 2, 1, "gC", "FENCE_REGRESSION")), porcupine.Ok},
		{"restore: the fence handed out again accepted",
			with(hop(60, 70, opInput{kind: opRestore}), grantOp(80, "C", 2), decideOp(90, 2, 1, "gC", "ACCEPTED")), porcupine.Illegal},
		{"RESOURCE_PAUSED while not paused", with(decideOp(60, 3, 1, "gC", "RESOURCE_PAUSED")), porcupine.Illegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(modelFor(c.h), c.h); got != (c.want == porcupine.Ok) {
				t.Errorf("linearizable = %t, want %s", got, c.want)
			}
		})
	}
}

// TestModelLostAnswers: a lost release may have taken effect at any time
// after it was sent, and a decision whose commit is unknown may or may
// not have happened; the model allows both, and still catches what
// neither branch explains.
func TestModelLostAnswers(t *testing.T) {
	m := newModel(modelParams{lockDelayMs: lockDelayMs})
	end := int64(10_000)
	lostRelease := []porcupine.Operation{grantOp(0, "A", 1), releaseOp(30, "A", "lost", end), grantOp(40, "B", 2)}
	if !porcupine.CheckOperations(m, lostRelease) {
		t.Error("a lost release that took effect before the next grant is legal")
	}
	lostBeforeGrant := []porcupine.Operation{grantOp(0, "A", 1), grantOp(40, "B", 2), releaseOp(60, "A", "lost", end)}
	if porcupine.CheckOperations(m, lostBeforeGrant) {
		t.Error("a release sent after the next grant cannot explain it")
	}
	unknown := []porcupine.Operation{grantOp(0, "A", 1), decideOp(10, 1, 1, "gA", "unknown"), decideOp(20, 1, 2, "gA", "ACCEPTED")}
	if !porcupine.CheckOperations(m, unknown) {
		t.Error("an unknown commit that happened explains segment 2")
	}
	unknownAbsent := []porcupine.Operation{grantOp(0, "A", 1), decideOp(10, 1, 1, "gA", "unknown"), decideOp(20, 1, 1, "gA", "ACCEPTED")}
	if !porcupine.CheckOperations(m, unknownAbsent) {
		t.Error("an unknown commit that did not happen explains segment 1 accepted later")
	}
	neither := []porcupine.Operation{grantOp(0, "A", 1), decideOp(10, 1, 1, "gA", "unknown"), decideOp(20, 1, 3, "gA", "ACCEPTED")}
	if porcupine.CheckOperations(m, neither) {
		t.Error("segment 3 after an unknown segment 1 is a gap either way")
	}
}

// TestModelPendingReleases: a lost release is pending from when it was
// sent until it takes effect, once per copy sent: a release retried and
// lost three times explains one next grant, and a copy sent before a
// restore can end the lease again after it, once the restored registry
// holds it again.
func TestModelPendingReleases(t *testing.T) {
	m := modelFor(nil)
	retried := []porcupine.Operation{grantOp(0, "A", 1),
		releaseOp(30, "A", "lost", 530), releaseOp(1030, "A", "lost", 1530), releaseOp(2030, "A", "lost", 2530), grantOp(2600, "B", 2)}
	if !porcupine.CheckOperations(m, retried) {
		t.Error("a release retried and lost three times explains the next grant")
	}
	acrossRestore := []porcupine.Operation{grantOp(0, "A", 1),
		releaseOp(30, "A", "lost", 530), releaseOp(1030, "A", "lost", 1530), grantOp(1600, "B", 2),
		hop(2000, 2100, opInput{kind: opRestore}), hop(2200, 2205, opInput{kind: opRenew, lease: "A", outcome: "ok", ttlMs: 3000}),
		grantOp(2300, "C", 2)}
	if !porcupine.CheckOperations(modelFor(acrossRestore), acrossRestore) {
		t.Error("the second copy of a release ends the lease the restored registry holds again")
	}
	once := append(acrossRestore[:1:1], releaseOp(30, "A", "lost", 530), grantOp(1600, "B", 2),
		hop(2000, 2100, opInput{kind: opRestore}), hop(2200, 2205, opInput{kind: opRenew, lease: "A", outcome: "ok", ttlMs: 3000}),
		grantOp(2300, "C", 2))
	if porcupine.CheckOperations(modelFor(once), once) {
		t.Error("one copy of a release took effect twice")
	}
}

// TestModelManyLostAnswersDecide: a resource with a hundred lost
// releases, retried in bursts while grants go on, gets a verdict within
// the checker's budget (the same release kept pending, not placed at
// every later instant).
func TestModelManyLostAnswersDecide(t *testing.T) {
	var h []porcupine.Operation
	at := int64(0)
	for i := range 25 {
		lease := string(rune('A'+i%26)) + "-" + string(rune('a'+i/26))
		h = append(h, grantOp(at, lease, uint64(i+1)))
		for k := range 4 {
			h = append(h, releaseOp(at+100+int64(k)*1000, lease, "lost", at+600+int64(k)*1000))
		}
		at += 4200
	}
	if res := porcupine.CheckOperationsTimeout(modelFor(h), h, checkTimeout); res != porcupine.Ok {
		t.Errorf("100 lost releases: %s, want Ok", res)
	}
}
