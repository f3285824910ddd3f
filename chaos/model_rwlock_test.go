// Proves the read/write lock's chaos model can fail: synthetic histories
// a correct registry and gate produce (readers sharing, a writer after
// them, a downgrade as the product makes it — the write lease RELEASED, a
// new reader's lease with its fence, other readers held back until the
// write lease's statements expired —, a dead reader's share ending by
// its own TTL, a lost release taking effect after its answer was lost)
// are linearizable, and two writers, a writer beside a reader, a reader's
// fence other than the last writer's, a writer let in beside a
// downgraded holder, a downgrade keeping the write lease or changing
// the fence, another reader admitted while the write lease's statements
// may be valid, a renewal of one reader keeping another alive and a
// reader's grant accepted as a mutation are not.
package chaos

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func rwOp(call, ret int64, in rwInput) porcupine.Operation {
	if in.resource == "" {
		in.resource = "r"
	}
	in.callMs = call
	return porcupine.Operation{Input: in, Call: call * 1e6, Return: ret * 1e6}
}

// rwGrantOp: lease granted in mode at fence, TTL 3 s.
func rwGrantOp(call int64, mode rwMode, lease string, fence uint64) porcupine.Operation {
	return rwOp(call, call+5, rwInput{opInput: opInput{kind: opGrant, lease: lease, fence: fence, issuedMs: call + 1, expiresMs: call + 1 + 3000}, mode: mode})
}

func rwLeaseOp(call int64, kind opKind, lease, outcome string) porcupine.Operation {
	return rwOp(call, call+5, rwInput{opInput: opInput{kind: kind, lease: lease, outcome: outcome, ttlMs: 3000}})
}

// rwDowngradeOp: the write lease from downgraded at call, answered with
// the reader's lease reader at fence (TTL 3 s from the downgrade).
func rwDowngradeOp(call int64, from, reader string, fence uint64) porcupine.Operation {
	return rwOp(call, call+5, rwInput{opInput: opInput{kind: opDowngrade, lease: reader, fence: fence, issuedMs: call + 1, expiresMs: call + 1 + 3000}, from: from})
}

func rwDecideOp(call int64, mode rwMode, fence uint64, grant, outcome string) porcupine.Operation {
	return rwOp(call, call+5, rwInput{opInput: opInput{kind: opDecide, fence: fence, seq: 1, grant: grant, outcome: outcome}, mode: mode})
}

func TestRWLockModel(t *testing.T) {
	// a writer, then two readers sharing its fence, then the next writer
	base := []porcupine.Operation{
		rwGrantOp(0, rwWrite, "W1", 1), rwDecideOp(10, rwWrite, 1, "gW1", "ACCEPTED"), rwLeaseOp(20, opRelease, "W1", "ok"),
		rwGrantOp(30, rwRead, "R1", 1), rwGrantOp(40, rwRead, "R2", 1),
		rwDecideOp(50, rwRead, 1, "gR1", rwReaderRefused),
		rwLeaseOp(60, opRelease, "R1", "ok"), rwLeaseOp(70, opRelease, "R2", "ok"),
		rwGrantOp(80, rwWrite, "W2", 2), rwDecideOp(90, rwWrite, 2, "gW2", "ACCEPTED"),
	}
	with := func(ops ...porcupine.Operation) []porcupine.Operation {
		return append(append([]porcupine.Operation{}, base...), ops...)
	}
	for _, c := range []struct {
		name string
		h    []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"readers share, writers exclude", base, porcupine.Ok},
		{"two writers", with(rwGrantOp(100, rwWrite, "W3", 3)), porcupine.Illegal},
		{"a reader beside a writer", with(rwGrantOp(100, rwRead, "R3", 2)), porcupine.Illegal},
		{"a writer beside a reader", append(append([]porcupine.Operation{}, base[:5]...), rwGrantOp(45, rwWrite, "W3", 2)), porcupine.Illegal},
		{"a writer after the readers' shares ran out (own TTLs, lock-delay)",
			append(append([]porcupine.Operation{}, base[:5]...), rwGrantOp(4100, rwWrite, "W3", 2)), porcupine.Ok},
		{"a reader's fence not the last writer's", with(rwLeaseOp(100, opRelease, "W2", "ok"), rwGrantOp(110, rwRead, "R3", 1)), porcupine.Illegal},
		{"a reader's fence the last writer's", with(rwLeaseOp(100, opRelease, "W2", "ok"), rwGrantOp(110, rwRead, "R3", 2)), porcupine.Ok},
		{"a writer's fence not rising", with(rwLeaseOp(100, opRelease, "W2", "ok"), rwGrantOp(110, rwWrite, "W3", 2)), porcupine.Illegal},
		{"a reader's grant accepted as a mutation", with(rwLeaseOp(100, opRelease, "W2", "ok"), rwGrantOp(110, rwRead, "R3", 2),
			rwDecideOp(120, rwRead, 2, "gR3", "ACCEPTED")), porcupine.Illegal},
		{"a reader's grant refused as a mutation", with(rwLeaseOp(100, opRelease, "W2", "ok"), rwGrantOp(110, rwRead, "R3", 2),
			rwDecideOp(120, rwRead, 2, "gR3", rwReaderRefused)), porcupine.Ok},
		{"a stale writer's write accepted", with(rwDecideOp(100, rwWrite, 1, "gW1", "ACCEPTED")), porcupine.Illegal},
		{"a lost release that took effect", with(rwOp(100, 10_000, rwInput{opInput: opInput{kind: opRelease, lease: "W2", outcome: "lost"}}),
			rwGrantOp(200, rwRead, "R3", 2)), porcupine.Ok},
		{"downgrade: the write lease ends, a new reader's lease keeps its fence",
			with(rwDowngradeOp(100, "W2", "W2r", 2), rwDecideOp(110, rwRead, 2, "gW2r", rwReaderRefused), rwLeaseOp(120, opRenew, "W2r", "ok")), porcupine.Ok},
		{"downgrade: the write lease kept (the same lease)", with(rwDowngradeOp(100, "W2", "W2", 2)), porcupine.Illegal},
		{"downgrade: the write lease renewed after it", with(rwDowngradeOp(100, "W2", "W2r", 2), rwLeaseOp(110, opRenew, "W2", "ok")), porcupine.Illegal},
		{"downgrade: the reader's lease carries another fence", with(rwDowngradeOp(100, "W2", "W2r", 3)), porcupine.Illegal},
		{"downgrade: another reader while the write lease's statements may be valid",
			with(rwDowngradeOp(100, "W2", "W2r", 2), rwGrantOp(110, rwRead, "R3", 2)), porcupine.Illegal},
		{"downgrade: another reader once they expired",
			with(rwDowngradeOp(100, "W2", "W2r", 2), rwGrantOp(100+rwStatementsMs+10, rwRead, "R3", 2)), porcupine.Ok},
		{"downgrade: another reader once the write lease expired, sooner",
			with(rwDowngradeOp(2500, "W2", "W2r", 2), rwGrantOp(3100, rwRead, "R3", 2)), porcupine.Ok},
		{"downgrade: a writer let in beside the downgraded holder",
			with(rwDowngradeOp(100, "W2", "W2r", 2), rwGrantOp(110, rwWrite, "W3", 3)), porcupine.Illegal},
		{"downgrade: a writer once the downgraded holder released",
			with(rwDowngradeOp(100, "W2", "W2r", 2), rwLeaseOp(200, opRelease, "W2r", "ok"), rwGrantOp(300, rwWrite, "W3", 3)), porcupine.Ok},
		{"downgrade by a lease that is not the writer", with(rwDowngradeOp(100, "R1", "R1r", 2)), porcupine.Illegal},
		{"the downgraded holder's mutation accepted", with(rwDowngradeOp(100, "W2", "W2r", 2),
			rwDecideOp(110, rwRead, 2, "gW2r", "ACCEPTED")), porcupine.Illegal},
		{"a lost release that took effect after its answer was lost",
			with(rwLeaseOp(100, opRelease, "W2", "lost"), rwGrantOp(200, rwRead, "R3", 2)), porcupine.Ok},
		{"a reader after a repair carries the last writer's fence, below the floor",
			with(rwLeaseOp(100, opRelease, "W2", "ok"), rwOp(110, 115, rwInput{opInput: opInput{kind: opRepair, floor: 10}}),
				rwGrantOp(120, rwRead, "R3", 2), rwLeaseOp(130, opRelease, "R3", "ok"), rwGrantOp(140, rwWrite, "W3", 11)), porcupine.Ok},
		{"a writer's fence at the floor", with(rwLeaseOp(100, opRelease, "W2", "ok"), rwOp(110, 115, rwInput{opInput: opInput{kind: opRepair, floor: 10}}),
			rwGrantOp(140, rwWrite, "W3", 10)), porcupine.Illegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(rwModelFor(c.h), c.h); got != (c.want == porcupine.Ok) {
				t.Errorf("linearizable = %t, want %s", got, c.want)
			}
		})
	}
}

// TestRWLockModelOwnLeases: each holder's share ends by its own TTL: a
// reader that stopped renewing is gone at its expiry (plus lock-delay)
// although another reader renewed meanwhile (a model that let one
// reader's renewal extend every share, as redisson#7098's watchdog did,
// would refuse the writer), and the renewed reader's share lasts.
func TestRWLockModelOwnLeases(t *testing.T) {
	readers := []porcupine.Operation{
		rwGrantOp(0, rwRead, "R1", 1), rwGrantOp(10, rwRead, "R2", 1), // no writer yet: R1 claims the next fence; R1 then dies: no renewal
		rwLeaseOp(2000, opRenew, "R2", "ok"), rwLeaseOp(2500, opRelease, "R2", "ok"),
	}
	after := append(append([]porcupine.Operation{}, readers...), rwGrantOp(4100, rwWrite, "W", 2))
	if !porcupine.CheckOperations(rwModelFor(after), after) {
		t.Error("a writer after the dead reader's own TTL and lock-delay is legal")
	}
	kept := append(append([]porcupine.Operation{}, readers[:3]...), rwGrantOp(4100, rwWrite, "W", 2))
	if porcupine.CheckOperations(rwModelFor(kept), kept) {
		t.Error("a writer granted while the renewed reader still holds")
	}
	early := append(append([]porcupine.Operation{}, readers...), rwGrantOp(3500, rwWrite, "W", 2))
	if porcupine.CheckOperations(rwModelFor(early), early) {
		t.Error("a writer granted before the dead reader's lock-delay ran out")
	}
}
