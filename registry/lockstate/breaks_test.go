// This file proves the break decisions at fixed instants: a lock set's
// member's break (DecideSetBreak) ends every member the set still holds
// and hands each plain head its member, never a set's ticket; it fails,
// writing nothing, when the named member no longer holds the set's lease,
// and leaves alone a member another holder took; SetOf finds the set
// from any member's record. The readers' break (DecideBreakReaders) ends
// every reader and hands the queued writer the lock, ends no writer, and
// DecideBreak ends whoever holds.
package lockstate

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

func TestDecideSetBreak(t *testing.T) {
	lim := testLimits()
	members := []string{"a", "b", "c"}
	in := setInput(t, "s", "set1", false, 0, members...)
	d, err := DecideSetAcquire([]*Record{nil, nil, nil}, []*RequestEntry{nil, nil, nil}, Settings{}, in, t0, lim)
	if err != nil || d.Outcome != AcquireGranted {
		t.Fatalf("%v %+v", err, d)
	}
	got, owner, id, ok := SetOf(d.Records[1], "b", Settings{}, t0+1, lim)
	if !ok || owner != "s" || id != "set1" || len(got) != 3 {
		t.Fatalf("SetOf b: %v %s %s %v", got, owner, id, ok)
	}
	if _, _, _, ok := SetOf(d.Records[1], "b", Settings{}, t0+20_000, lim); ok {
		t.Fatal("SetOf found a set whose lease had expired")
	}
	recs := []*Record{d.Records[0].Clone(), d.Records[1].Clone(), d.Records[2]}
	recs[0].Waiters = []Waiter{tk("p", "rp", t0+99_000)}                                                    // a plain head on a
	recs[1].Waiters = []Waiter{setInput(t, "t", "set2", true, t0+99_000, "b", "z").queueTicket(0, t0, lim)} // a set's ticket on b
	out, ended, err := DecideSetBreak(recs, members, 1, Settings{}, "s", "set1", t0+5, lim, none)
	if err != nil {
		t.Fatal(err)
	}
	for i := range members {
		if ended[i] == nil || ended[i].Grant.Resource != members[i] || out.Records[i] == nil {
			t.Fatalf("member %s not ended: %+v", members[i], ended[i])
		}
		if e := out.Records[i].Ended; len(e) == 0 || !e[len(e)-1].Broken {
			t.Fatalf("member %s's ended lease not marked broken: %+v", members[i], e)
		}
	}
	if h := out.Records[0].Holder; h == nil || h.Grant.Owner != "p" || h.Grant.FenceToken != 2 || len(out.Entries) != 1 {
		t.Fatalf("a's plain head not handed a at fence 2: %+v %d entries", h, len(out.Entries))
	}
	if out.Records[1].Holder != nil || len(out.Records[1].Waiters) != 1 || out.Records[2].Holder != nil {
		t.Fatalf("b handed to a set's ticket, or c not free: %+v %+v", out.Records[1].Holder, out.Records[2].Holder)
	}

	// Another holder took c (the set had released it alone): c is left as it is.
	mixed := []*Record{d.Records[0], d.Records[1], {HighestFence: 2, Holder: &Holder{Grant: GrantBody{Resource: "c", Owner: "o", RequestID: "x", Lease: "lx", FenceToken: 2}, ExpiresAtMs: t0 + 10_000}}}
	out, ended, err = DecideSetBreak(mixed, members, 0, Settings{}, "s", "set1", t0+5, lim, none)
	if err != nil || out.Records[2] != nil || ended[2] != nil || out.Records[0] == nil || out.Records[1] == nil {
		t.Fatalf("c held by another: %v %+v %+v", err, out.Records, ended)
	}
	// The named member no longer holds the set's lease: nothing is written.
	if _, _, err := DecideSetBreak(mixed, members, 2, Settings{}, "s", "set1", t0+5, lim, none); !errors.Is(err, wire.ErrNotHolder) {
		t.Fatalf("named member held by another: %v, want NOT_HOLDER", err)
	}
}

func TestDecideBreakReaders(t *testing.T) {
	lim := testLimits()
	d := rwStep(t, &Record{}, rwIn("a", "r1", true, false, t0), t0)
	d = rwStep(t, d.Record, rwIn("b", "r2", true, false, t0+1), t0+1)
	q := rwStep(t, d.Record, rwIn("w", "w1", false, true, t0+2), t0+2)
	out, ended := DecideBreakReaders(q.Record, Settings{}, t0+3, lim, none)
	if len(ended) != 2 || ended[0].Grant.Resource != "rw/1/_read" || len(out.Record.Readers) != 0 {
		t.Fatalf("readers' break: %d ended, %d readers left", len(ended), len(out.Record.Readers))
	}
	if h := out.Record.Holder; h == nil || h.Grant.Owner != "w" || h.Grant.FenceToken != 2 || len(out.Entries) != 1 {
		t.Fatalf("the queued writer not handed the lock at fence 2: %+v", h)
	}
	// With the writer holding, the readers' break ends nothing; DecideBreak ends the writer.
	if again, ended := DecideBreakReaders(out.Record, Settings{}, t0+4, lim, none); again.Record != nil || len(ended) != 0 {
		t.Fatalf("the readers' break ended the writer: %+v", ended)
	}
	if _, ended := DecideBreak(out.Record, Settings{}, t0+4, lim, none); len(ended) != 1 || ended[0].Grant.Owner != "w" {
		t.Fatalf("break of the lock with its writer: %+v", ended)
	}
	if _, ended := DecideBreak(q.Record, Settings{}, t0+3, lim, none); len(ended) != 2 {
		t.Fatalf("break of the lock with its readers: %d ended, want both", len(ended))
	}
}
