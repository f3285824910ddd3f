// Proves the semaphore check over a recorded history can fail: the
// semaphore's events of seed 1 on etcd (45 s, two permits of
// chaos/sem-1, a restore from a snapshot, both slots paused and
// repaired) are linearizable as recorded, and each tampering a broken
// registry or gate would produce is Illegal: an N+1st permit on a slot
// past N, a slot held twice, a stale permit holder's write accepted at
// its slot's gate, PERMITS_MISMATCH for the recorded N.
package chaos

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

const semHistoryDir = "testdata/semaphore1"

func TestRecordedSemaphoreHistory(t *testing.T) {
	rep, err := CheckHistory(semHistoryDir, "", 1, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sem.Verdict != porcupine.Ok || rep.Sem.Operations < 150 || len(rep.Sem.Semaphores) != 1 {
		t.Fatalf("as recorded: semaphores %v, %s over %d operations; want Ok over the 218 recorded\n%v", rep.Sem.Semaphores, rep.Sem.Verdict, rep.Sem.Operations, rep.Sem.Evidence)
	}
	if rep.Verdict != porcupine.Ok {
		t.Fatalf("as recorded: the exclusive model over the slots says %s", rep.Verdict)
	}
	h, err := LoadHistory(semHistoryDir)
	if err != nil {
		t.Fatal(err)
	}
	grants := semGrants(h, 0)
	if len(grants) < 10 {
		t.Fatalf("%d grants on slot 0 recorded; want the run's", len(grants))
	}
	g := grants[len(grants)/2] // a permit held mid-run
	for _, c := range []struct {
		name   string
		tamper func() []record.Event
		// exclusiveOk: each slot alone is still an exclusive lock's
		// legal history; only the semaphore model sees the violation.
		exclusiveOk bool
	}{
		{"an N+1st permit, on a slot past N", func() []record.Event {
			e := g
			e.Lease, e.RequestID, e.Fence, e.Resource = "tampered", "req-tampered", 1, wire.SlotResource("chaos/sem-1", 2)
			e.CallNs, e.RetNs = e.RetNs+1e6, e.RetNs+2e6
			return []record.Event{e}
		}, true},
		{"a slot held twice", func() []record.Event {
			e := g
			e.Lease, e.RequestID, e.Fence = "tampered", "req-tampered", g.Fence+1
			e.CallNs, e.RetNs = e.RetNs+1e6, e.RetNs+2e6
			e.GrantIssuedMs = e.CallNs / 1e6
			return []record.Event{e}
		}, false},
		{"PERMITS_MISMATCH answered for the recorded N", func() []record.Event {
			return []record.Event{{Kind: record.KindAcquire, Proc: "tampered", CallNs: g.RetNs + 1e6, RetNs: g.RetNs + 2e6,
				Result: semPermitsMismatch, Resource: "chaos/sem-1", Permits: g.Permits}}
		}, true},
		{"a stale permit holder's write accepted at its slot's gate", func() []record.Event {
			d := lastAccepted(h, wire.SlotResource("chaos/sem-1", 0))
			if d.Fence < 2 {
				t.Fatalf("slot 0's last accepted fence is %d; want a slot handed on", d.Fence)
			}
			d.Fence, d.Seq, d.GrantDigest, d.Lease = d.Fence-1, 1, "tampered", "tampered"
			d.CallNs, d.RetNs = d.RetNs+1e6, d.RetNs+2e6
			return []record.Event{d}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := &History{Events: append([]record.Event{}, h.Events...)}
			th.add(c.tamper()...)
			ops := th.SemaphoreOperations()
			if porcupine.CheckOperations(semModelFor(ops), ops) {
				t.Errorf("the semaphore model calls it linearizable")
			}
			if ex := th.Operations(th.Resources()); porcupine.CheckOperations(modelFor(ex), ex) != c.exclusiveOk {
				t.Errorf("the exclusive model over the slots: linearizable = %t, want %t", !c.exclusiveOk, c.exclusiveOk)
			}
		})
	}
}

// semGrants are the HELD grants on slot i of chaos/sem-1, in call order.
func semGrants(h *History, i int) []record.Event {
	var out []record.Event
	for _, e := range h.Events {
		if e.Kind == record.KindAcquire && e.Result == record.ResultOK && e.State == string(grant.StateHeld) && e.Resource == wire.SlotResource("chaos/sem-1", i) {
			out = append(out, e)
		}
	}
	return out
}

// lastAccepted is the last ACCEPTED decision on res.
func lastAccepted(h *History, res string) record.Event {
	var out record.Event
	for _, e := range h.Events {
		if e.Kind == record.KindDecide && e.Result == "ACCEPTED" && e.Resource == res {
			out = e
		}
	}
	return out
}
