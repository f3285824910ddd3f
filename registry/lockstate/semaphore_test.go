// This file proves the semaphore's pure decisions at fixed instants: the
// k-th ticket tries the k-th free slot, a caller behind the free slots
// queues (or is BUSY), N is recorded by the first acquire and another N
// or a plain lock's name refused, an unseen ticket is dropped, and a slot
// acquire is an ordinary acquire of the slot's resource.
package lockstate

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

func semInput(owner, id string, permits uint64, wait bool, deadline int64) AcquireInput {
	in := input(owner, id, wait, deadline)
	in.Req.Resource, in.Req.Permits = "pool/db", permits
	return in
}

func TestDecideSemaphore(t *testing.T) {
	lim := testLimits()
	busy := held("x", 4, t0) // a slot with a live holder
	ticket := func(owner string, seen int64) Waiter {
		w := semInput(owner, "q-"+owner, 3, true, t0+20_000).ticket("sha256:p", seen, lim)
		return w
	}
	cases := []struct {
		name    string
		rec     *Record
		slots   []*Record
		in      AcquireInput
		want    SemaphoreOutcome
		slot    int
		permits uint64 // the record written's, 0: no write
		waiters int
		lost    bool
		err     error
	}{
		{name: "first acquire records N and tries slot 0", rec: &Record{}, slots: []*Record{nil, nil, nil},
			in: semInput("a", "a", 3, false, 0), want: SemaphoreTry, slot: 0, permits: 3},
		{name: "a busy slot is skipped", rec: &Record{Permits: 3}, slots: []*Record{busy, nil, busy},
			in: semInput("a", "a", 3, false, 0), want: SemaphoreTry, slot: 1},
		{name: "behind one ticket, the second free slot", rec: &Record{Permits: 3, Waiters: []Waiter{ticket("w", t0)}},
			slots: []*Record{nil, busy, nil}, in: semInput("a", "a", 3, true, t0+10_000), want: SemaphoreTry, slot: 2},
		{name: "behind as many tickets as free slots, queue", rec: &Record{Permits: 3, Waiters: []Waiter{ticket("w", t0)}},
			slots: []*Record{nil, busy, busy}, in: semInput("a", "a", 3, true, t0+10_000), want: SemaphoreQueued, permits: 3, waiters: 2},
		{name: "an unseen ticket is dropped", rec: &Record{Permits: 3, Waiters: []Waiter{ticket("w", t0-2*int64(lim.HandoffClaimMs))}},
			slots: []*Record{nil, busy, busy}, in: semInput("a", "a", 3, false, 0), want: SemaphoreTry, slot: 0, permits: 3},
		{name: "a waiter that lost a race queues", rec: &Record{Permits: 3}, slots: []*Record{nil, busy, busy}, lost: true,
			in: semInput("a", "a", 3, true, t0+10_000), want: SemaphoreQueued, permits: 3, waiters: 1},
		{name: "a non-waiting caller that lost a race tries again", rec: &Record{Permits: 3}, slots: []*Record{busy, nil, busy}, lost: true,
			in: semInput("a", "a", 3, false, 0), want: SemaphoreTry, slot: 1},
		{name: "all busy, no wait", rec: &Record{Permits: 3}, slots: []*Record{busy, busy, busy},
			in: semInput("a", "a", 3, false, 0), err: wire.ErrBusy},
		{name: "another N", rec: &Record{Permits: 3}, slots: []*Record{nil, nil},
			in: semInput("a", "a", 2, false, 0), err: wire.ErrPermitsMismatch},
		{name: "a plain lock's name", rec: busy, slots: []*Record{nil, nil},
			in: semInput("a", "a", 2, false, 0), err: wire.ErrPermitsMismatch},
	}
	for _, c := range cases {
		d, err := DecideSemaphore(c.rec, c.slots, Settings{}, c.in, c.lost, t0, lim)
		if c.err != nil || err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if d.Outcome != c.want || d.Outcome == SemaphoreTry && d.Slot != c.slot {
			t.Errorf("%s: outcome %d slot %d, want %d slot %d", c.name, d.Outcome, d.Slot, c.want, c.slot)
		}
		switch {
		case c.permits == 0 && d.Record != nil:
			t.Errorf("%s: wrote %+v, want no write", c.name, d.Record)
		case c.permits != 0 && (d.Record == nil || d.Record.Permits != c.permits || len(d.Record.Waiters) != c.waiters):
			t.Errorf("%s: wrote %+v, want permits %d and %d waiters", c.name, d.Record, c.permits, c.waiters)
		}
	}
}

func TestPlainAcquireOfSemaphoreOrSlotRefused(t *testing.T) {
	lim := testLimits()
	if _, err := DecideAcquire(&Record{Permits: 3}, nil, Settings{}, input("a", "a", false, 0), t0, lim); !errors.Is(err, wire.ErrPermitsMismatch) {
		t.Errorf("plain acquire of a semaphore's name: %v", err)
	}
	req := wire.AcquireRequest{Resource: wire.SlotResource("pool/db", 1), OperationID: "op", OperationClass: "settle", RequestID: "r"}
	if _, err := NewAcquireInput("a", req, t0, lim); !errors.Is(err, wire.ErrInvalid) {
		t.Errorf("plain acquire of a slot: %v", err)
	}
	// The slot acquire a semaphore makes is an ordinary one on the slot.
	in := semInput("a", "a", 3, true, t0+5000).SlotInput(2)
	d, err := DecideAcquire(&Record{HighestFence: 9}, nil, Settings{}, in, t0, lim)
	if err != nil || d.Outcome != AcquireGranted || d.Body.Resource != "pool/db/_slot.2" || d.Body.FenceToken != 10 {
		t.Fatalf("slot acquire: %v %+v", err, d.Body)
	}
}

func TestSlotNames(t *testing.T) {
	for _, c := range []struct {
		in   string
		name string
		i    int
		ok   bool
	}{
		{"a/_slot.0", "a", 0, true}, {"a/b/_slot.12", "a/b", 12, true},
		{"a/_slot.01", "", 0, false}, {"a/_slot.", "", 0, false}, {"_slot.1", "", 0, false}, {"a/_slot.-1", "", 0, false}, {"a/slot.1", "", 0, false},
	} {
		name, i, ok := wire.SlotOf(c.in)
		if name != c.name || i != c.i || ok != c.ok {
			t.Errorf("SlotOf(%q) = %q %d %v", c.in, name, i, ok)
		}
		if ok && wire.SlotResource(name, i) != c.in {
			t.Errorf("SlotResource(%q, %d) != %q", name, i, c.in)
		}
	}
}
