// Proves the semaphore's chaos model can fail: synthetic histories of a
// 3-permit semaphore that a correct registry and gates produce are
// linearizable, and an N+1st permit, a slot held twice, a slot's fence
// going back, a lease on two slots, a grant under another N and a
// frozen permit holder's write accepted after its slot moved on are not.
package chaos

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// semOp builds one semaphore operation at [call, ret] (ms).
func semOp(call, ret int64, in semInput) porcupine.Operation {
	if in.name == "" {
		in.name = "jobs"
	}
	in.callMs = call
	return porcupine.Operation{Input: in, Call: call * 1e6, Return: ret * 1e6}
}

// permitOp: lease granted slot of jobs (N permits) at fence, TTL 3 s.
func permitOp(call int64, n uint64, slot int, lease string, fence uint64) porcupine.Operation {
	return semOp(call, call+5, semInput{opInput: opInput{kind: opGrant, lease: lease, fence: fence, issuedMs: call + 1, expiresMs: call + 1 + 3000},
		permits: n, slot: slot})
}

func semReleaseOp(call int64, slot int, lease string) porcupine.Operation {
	return semOp(call, call+5, semInput{opInput: opInput{kind: opRelease, lease: lease, outcome: "ok"}, slot: slot})
}

func semDecideOp(call int64, slot int, fence uint64, grant, outcome string) porcupine.Operation {
	return semOp(call, call+5, semInput{opInput: opInput{kind: opDecide, fence: fence, seq: 1, grant: grant, outcome: outcome}, slot: slot})
}

func TestSemaphoreModel(t *testing.T) {
	// three permits held at once, one released and granted again on its slot
	base := []porcupine.Operation{
		permitOp(0, 3, 0, "A", 1), permitOp(10, 3, 1, "B", 1), permitOp(20, 3, 2, "C", 1),
		semDecideOp(30, 0, 1, "gA", "ACCEPTED"), semDecideOp(31, 1, 1, "gB", "ACCEPTED"), semDecideOp(32, 2, 1, "gC", "ACCEPTED"),
		semReleaseOp(40, 1, "B"), permitOp(50, 3, 1, "D", 2), semDecideOp(60, 1, 2, "gD", "ACCEPTED"),
	}
	with := func(ops ...porcupine.Operation) []porcupine.Operation {
		return append(append([]porcupine.Operation{}, base...), ops...)
	}
	for _, c := range []struct {
		name string
		h    []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"three permits, a slot handed on", base, porcupine.Ok},
		{"a busy answer while all slots are held", with(semOp(70, 75, semInput{opInput: opInput{kind: opGrant, outcome: "BUSY"}, permits: 3})), porcupine.Ok},
		{"an N+1st permit on a slot past N", with(permitOp(70, 3, 3, "E", 1)), porcupine.Illegal},
		{"an N+1st permit on a held slot", with(permitOp(70, 3, 2, "E", 2)), porcupine.Illegal},
		{"a slot's fence going back", with(semReleaseOp(70, 1, "D"), permitOp(80, 3, 1, "E", 1)), porcupine.Illegal},
		{"a slot's fence not rising", with(semReleaseOp(70, 1, "D"), permitOp(80, 3, 1, "E", 2)), porcupine.Illegal},
		{"the next fence on a released slot", with(semReleaseOp(70, 1, "D"), permitOp(80, 3, 1, "E", 3)), porcupine.Ok},
		{"fences of different slots are independent", with(semReleaseOp(70, 0, "A"), permitOp(80, 3, 0, "E", 2)), porcupine.Ok},
		{"one lease on two slots", with(semReleaseOp(70, 2, "C"), permitOp(80, 3, 2, "A", 2)), porcupine.Illegal},
		{"the same permit answered again (a retry)", with(permitOp(70, 3, 0, "A", 1)), porcupine.Ok},
		{"granted under another N", with(semReleaseOp(70, 2, "C"), permitOp(80, 4, 2, "E", 2)), porcupine.Illegal},
		{"PERMITS_MISMATCH for another N", with(semOp(70, 75, semInput{opInput: opInput{kind: opGrant, outcome: "PERMITS_MISMATCH"}, permits: 4})), porcupine.Ok},
		{"PERMITS_MISMATCH for the recorded N", with(semOp(70, 75, semInput{opInput: opInput{kind: opGrant, outcome: "PERMITS_MISMATCH"}, permits: 3})), porcupine.Illegal},
		{"an expired permit's slot to the next, its late write refused",
			with(permitOp(4100, 3, 2, "E", 2), semDecideOp(4200, 2, 2, "gE", "ACCEPTED"), semDecideOp(4300, 2, 1, "gC2", "STALE_OWNER")), porcupine.Ok},
		{"an expired permit's late write accepted on its slot",
			with(permitOp(4100, 3, 2, "E", 2), semDecideOp(4200, 2, 2, "gE", "ACCEPTED"), semDecideOp(4300, 2, 1, "gC2", "ACCEPTED")), porcupine.Illegal},
		{"the expired slot granted within lock-delay", with(permitOp(3500, 3, 2, "E", 2)), porcupine.Illegal},
		{"STALE_OWNER at a slot whose highest is that fence (another slot's higher fence does not count)", with(semDecideOp(70, 0, 1, "gA", "STALE_OWNER")), porcupine.Illegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(semModelFor(c.h), c.h); got != (c.want == porcupine.Ok) {
				t.Errorf("linearizable = %t, want %s", got, c.want)
			}
		})
	}
}

// TestSemaphoreModelConcurrent: permits asked for at the same time may
// be granted in any order, and a lost release may free its slot for the
// next permit, but no order explains a fourth holder.
func TestSemaphoreModelConcurrent(t *testing.T) {
	overlapping := []porcupine.Operation{
		semOp(0, 50, semInput{opInput: opInput{kind: opGrant, lease: "A", fence: 1, issuedMs: 20, expiresMs: 3020}, permits: 3, slot: 0}),
		semOp(0, 50, semInput{opInput: opInput{kind: opGrant, lease: "B", fence: 1, issuedMs: 10, expiresMs: 3010}, permits: 3, slot: 1}),
		semOp(0, 50, semInput{opInput: opInput{kind: opGrant, lease: "C", fence: 1, issuedMs: 30, expiresMs: 3030}, permits: 3, slot: 2}),
	}
	if !porcupine.CheckOperations(semModelFor(overlapping), overlapping) {
		t.Error("three concurrent permits on three slots are legal")
	}
	lost := append(append([]porcupine.Operation{}, overlapping...),
		semOp(100, 10_000, semInput{opInput: opInput{kind: opRelease, lease: "B", outcome: "lost"}, slot: 1}),
		permitOp(200, 3, 1, "D", 2))
	if !porcupine.CheckOperations(semModelFor(lost), lost) {
		t.Error("a lost release that took effect frees its slot")
	}
	fourth := append(append([]porcupine.Operation{}, overlapping...),
		semOp(0, 50, semInput{opInput: opInput{kind: opGrant, lease: "D", fence: 2, issuedMs: 40, expiresMs: 3040}, permits: 3, slot: 1}))
	if porcupine.CheckOperations(semModelFor(fourth), fourth) {
		t.Error("four concurrent holders of three permits")
	}
}
