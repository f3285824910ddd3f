// Proves the read/write lock check over a recorded history can fail:
// the read/write lock's events of seed 5 on etcd (45 s, chaos/rw-1:
// writers, readers sharing, five downgrades and one lost, readers'
// grants presented at the gate and refused READ_GRANT, a restore from a
// snapshot, the lock's gate paused and repaired) are linearizable as
// recorded, and each tampering a broken registry or gate would produce
// is Illegal: a writer granted beside a live reader, a reader's mutation
// accepted, a downgrade whose reader's lease carries another fence, a
// stale writer's write accepted.
package chaos

import (
	"sort"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

const (
	rwHistoryDir = "testdata/rwlock5"
	rwLock       = "chaos/rw-1"
)

func TestRecordedRWLockHistory(t *testing.T) {
	rep, err := CheckHistory(rwHistoryDir, "", 5, false, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rep.RW.Verdict != porcupine.Ok || rep.RW.Operations < 100 || len(rep.RW.Locks) != 1 {
		t.Fatalf("as recorded: read/write locks %v, %s over %d operations; want Ok over the 109 recorded\n%v", rep.RW.Locks, rep.RW.Verdict, rep.RW.Operations, rep.RW.Evidence)
	}
	if rep.Verdict != porcupine.Ok {
		t.Fatalf("as recorded: the run's verdict is %s", rep.Verdict)
	}
	h, err := LoadHistory(rwHistoryDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		// tamper changes a copy of h's events in place, or returns
		// events to add.
		tamper func(evs []record.Event) []record.Event
	}{
		{"a writer granted beside a live reader", func(evs []record.Event) []record.Event {
			// the next writer after a reader that released, moved to
			// just after the reader's grant: its fence still rises
			r, w := readerThenWriter(t, evs)
			d := evs[r].RetNs + 1e6 - evs[w].CallNs
			evs[w].CallNs, evs[w].RetNs = evs[w].CallNs+d, evs[w].CallNs+d+1e6
			evs[w].GrantIssuedMs = evs[w].CallNs / 1e6
			return nil
		}},
		{"a reader's mutation accepted", func(evs []record.Event) []record.Event {
			i := find(t, evs, func(e record.Event) bool {
				return e.Kind == record.KindDecide && e.Mode == wire.ModeRead && e.Result == string(gate.ReadGrant)
			})
			evs[i].Result = string(gate.Accepted)
			return nil
		}},
		{"a downgrade whose reader's lease carries another fence", func(evs []record.Event) []record.Event {
			i := find(t, evs, func(e record.Event) bool { return e.Kind == record.KindDowngrade && e.Result == record.ResultOK })
			evs[i].Fence++
			return nil
		}},
		{"a stale writer's write accepted", func(evs []record.Event) []record.Event {
			d := lastAccepted(h, rwLock)
			if d.Fence < 2 {
				t.Fatalf("the lock's last accepted fence is %d; want one handed on", d.Fence)
			}
			d.Fence, d.Seq, d.GrantDigest, d.Lease = d.Fence-1, 1, "tampered", "tampered"
			d.CallNs, d.RetNs = d.RetNs+1e6, d.RetNs+2e6
			return []record.Event{d}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := &History{Events: append([]record.Event{}, h.Events...)}
			th.add(c.tamper(th.Events)...)
			sort.SliceStable(th.Events, func(i, j int) bool { return th.Events[i].CallNs < th.Events[j].CallNs }) // after a move in place
			ops := th.RWOperations()
			if porcupine.CheckOperations(rwModelFor(ops), ops) {
				t.Errorf("the read/write model calls it linearizable")
			}
		})
	}
}

// readerThenWriter finds a reader's HELD grant released ok (not a
// downgrade's) and the first writer's grant after its release: their
// indexes in evs.
func readerThenWriter(t *testing.T, evs []record.Event) (reader, writer int) {
	t.Helper()
	for r, e := range evs {
		if e.Kind != record.KindAcquire || e.Result != record.ResultOK || e.State != string(grant.StateHeld) || e.Resource != wire.ReadResource(rwLock) {
			continue
		}
		released := int64(0)
		for _, x := range evs[r:] {
			if x.Kind == record.KindRelease && x.Lease == e.Lease && x.Result == record.ResultOK {
				released = x.RetNs
				break
			}
		}
		for w := r + 1; released != 0 && w < len(evs); w++ {
			x := evs[w]
			if x.CallNs > released && x.Kind == record.KindAcquire && x.Result == record.ResultOK && x.State == string(grant.StateHeld) {
				if x.Resource == rwLock {
					return r, w
				}
				if x.Resource == wire.ReadResource(rwLock) {
					break // another reader first
				}
			}
		}
	}
	t.Fatal("no reader released and then followed by a writer in the history")
	return 0, 0
}

// find is the index of the first event of evs that is, or fails t.
func find(t *testing.T, evs []record.Event, is func(record.Event) bool) int {
	t.Helper()
	for i, e := range evs {
		if is(e) {
			return i
		}
	}
	t.Fatal("no such event in the history")
	return 0
}
