// This file proves the pure core's decisions with table tests at fixed
// instants: fences, lock-delay after expiry but not release, FIFO order and
// the vanished-head skip, revocation, floors and request-ID idempotency. No
// store, no clock: the same inputs always give the same outputs.
package lockstate

import (
	"errors"
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

const t0 = int64(1_780_000_000_000) // a fixed registry instant, ms

// testLimits is registry.DefaultConfig(5)'s limits, written out: this
// package cannot import its shell.
func testLimits() Limits {
	return Limits{
		IssuerEpoch: 5, TTLMsMin: 2000, TTLMsMax: 600_000, TTLMsDefault: 15_000,
		LockDelayMs: 1000, ClockSkewMaxMs: 500, StatusProofTTLMs: 2000,
		WaitersPerResourceMax: 64, WaitMsMax: 30_000, HandoffClaimMs: 2000, WaiterGraceMs: 1000,
		RequestRetentionMs: 86_400_000,
	}
}

// none: no request ID has an entry.
var none []RequestKey

// tk is a queued ticket for owner's request id.
func tk(owner, id string, deadline int64) Waiter {
	return input(owner, id, true, deadline).ticket("sha256:params", 0, testLimits())
}

func input(owner, id string, wait bool, deadline int64) AcquireInput {
	return AcquireInput{
		Owner: owner, TTLMs: 10_000, Wait: wait, DeadlineMs: deadline,
		Req: wire.AcquireRequest{Resource: "res/1", OperationID: "op-" + id, OperationClass: "settle", RequestID: id},
	}
}

// held returns a record held by owner since at, with fence.
func held(owner string, fence uint64, at int64) *Record {
	in := input(owner, "req-"+owner, false, 0)
	d, err := DecideAcquire(&Record{HighestFence: fence - 1}, nil, Settings{}, in, at, testLimits())
	if err != nil || d.Outcome != AcquireGranted {
		panic("fixture")
	}
	return d.Record
}

func TestDecideAcquire(t *testing.T) {
	lim := testLimits()
	expiry := t0 + 10_000
	cases := []struct {
		name    string
		rec     *Record
		set     Settings
		in      AcquireInput
		now     int64
		want    AcquireOutcome
		wantErr error
		fence   uint64
		waiters int
	}{
		{"first grant", &Record{}, Settings{}, input("b", "r", false, 0), t0, AcquireGranted, nil, 1, 0},
		{"floor above highest", &Record{HighestFence: 3, Floor: 40}, Settings{}, input("b", "r", false, 0), t0, AcquireGranted, nil, 41, 0},
		{"highest above floor", &Record{HighestFence: 50, Floor: 40}, Settings{}, input("b", "r", false, 0), t0, AcquireGranted, nil, 51, 0},
		{"held: busy", held("a", 7, t0), Settings{}, input("b", "r", false, 0), t0 + 1, 0, wire.ErrBusy, 0, 0},
		{"held: queue", held("a", 7, t0), Settings{}, input("b", "r", true, t0+5000), t0 + 1, AcquireQueued, nil, 0, 1},
		{"expiry is at expiresAt, then lock-delay", held("a", 7, t0), Settings{}, input("b", "r", false, 0), expiry, 0, wire.ErrBusy, 0, 0},
		{"lock-delay ends", held("a", 7, t0), Settings{}, input("b", "r", false, 0), expiry + int64(lim.LockDelayMs), AcquireGranted, nil, 8, 0},
		{"one ms before expiry", held("a", 7, t0), Settings{}, input("b", "r", false, 0), expiry - 1, 0, wire.ErrBusy, 0, 0},
		{"revoked holder frees at once", held("a", 7, t0), Settings{RevokedBelowEpoch: 6}, input("b", "r", false, 0), t0 + 1, 0, wire.ErrEpochRevoked, 0, 0},
		{"wait deadline passed", held("a", 7, t0), Settings{}, input("b", "r", true, t0+1), t0 + 1, 0, wire.ErrWaitTimeout, 0, 0},
		{"free but others queued: no jumping", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0+9000)}, FreeAtMs: t0}, Settings{}, input("b", "r", false, 0), t0 + 1, 0, wire.ErrBusy, 0, 1},
		{"head of queue on free resource", &Record{HighestFence: 2, Waiters: []Waiter{tk("b", "r", t0+9000), tk("x", "rx", t0+9000)}, FreeAtMs: t0}, Settings{}, input("b", "r", true, t0+9000), t0 + 1, AcquireGranted, nil, 3, 1},
		{"head in its grace keeps its place", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0)}, FreeAtMs: t0}, Settings{}, input("b", "r", false, 0), t0 + 1, 0, wire.ErrBusy, 0, 1},
		{"dead head is pruned", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0)}, FreeAtMs: t0}, Settings{}, input("b", "r", false, 0), t0 + int64(lim.WaiterGraceMs), AcquireGranted, nil, 3, 0},
		{"vanished head skipped after claim window", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0+99_000), tk("b", "r", t0+99_000)}, FreeAtMs: t0}, Settings{}, input("b", "r", true, t0+99_000), t0 + int64(lim.HandoffClaimMs), AcquireGranted, nil, 3, 0},
		{"head keeps its window", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0+99_000), tk("b", "r", t0+99_000)}, FreeAtMs: t0}, Settings{}, input("b", "r", true, t0+99_000), t0 + int64(lim.HandoffClaimMs) - 1, AcquireQueued, nil, 0, 2},
		{"queue full", &Record{Holder: held("a", 1, t0).Holder, HighestFence: 1, Waiters: make([]Waiter, lim.WaitersPerResourceMax)}, Settings{}, input("b", "r", true, t0+5000), t0 + 1, 0, wire.ErrWaitersFull, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := range c.rec.Waiters {
				if c.rec.Waiters[i].Owner == "" {
					c.rec.Waiters[i] = tk("q", "q"+string(rune('a'+i%26)), t0+99_000)
				}
			}
			before := c.rec.Clone()
			d, err := DecideAcquire(c.rec, nil, c.set, c.in, c.now, lim)
			if !reflect.DeepEqual(c.rec, before) {
				t.Fatal("decision mutated its input")
			}
			if c.wantErr != nil || err != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				return
			}
			if d.Outcome != c.want {
				t.Fatalf("outcome %d, want %d", d.Outcome, c.want)
			}
			if c.want == AcquireGranted {
				if d.Body.FenceToken != c.fence || d.Record.HighestFence != c.fence || d.Record.Holder.Grant.FenceToken != c.fence {
					t.Fatalf("fence %d, want %d", d.Body.FenceToken, c.fence)
				}
				if _, err := d.Body.Grant(1); err != nil {
					t.Fatalf("granted body invalid: %v", err)
				}
			}
			if d.Record != nil && len(d.Record.Waiters) != c.waiters {
				t.Fatalf("%d waiters, want %d", len(d.Record.Waiters), c.waiters)
			}
		})
	}
}

func TestDecideAcquireRevokedHolderThenGrant(t *testing.T) {
	lim := testLimits()
	lim.IssuerEpoch = 9
	rec := held("a", 7, t0) // epoch 5
	d, err := DecideAcquire(rec, nil, Settings{RevokedBelowEpoch: 6}, input("b", "r", false, 0), t0+1, lim)
	if err != nil || d.Outcome != AcquireGranted || d.Body.FenceToken != 8 {
		t.Fatalf("after revocation a new-epoch registry grants at once: %v %+v", err, d)
	}
	if len(d.Entries) != 1 || d.Entries[0].Key.Owner != "b" {
		t.Fatalf("a grant writes its own entry and no other: %+v", d.Entries)
	}
	if e, ok := findEnded(d.Record, rec.Holder.Grant.Lease); !ok || e.State != grant.StateRevoked {
		t.Fatalf("revoked holder not ended in the record: %+v", d.Record.Ended)
	}
}

func TestDecideAcquireIdempotent(t *testing.T) {
	lim := testLimits()
	in := input("a", "r1", false, 0)
	d, _ := DecideAcquire(&Record{}, nil, Settings{}, in, t0, lim)
	own := d.Entries[len(d.Entries)-1].Entry
	again, err := DecideAcquire(d.Record, &own, Settings{}, in, t0+5, lim)
	if err != nil || again.Outcome != AcquireExisting || again.Record != nil {
		t.Fatalf("retry: %v %+v", err, again)
	}
	other := in
	other.TTLMs = 20_000
	if _, err := DecideAcquire(d.Record, &own, Settings{}, other, t0+5, lim); !errors.Is(err, wire.ErrRequestMismatch) {
		t.Fatalf("changed TTL: %v", err)
	}
	own.State, own.EndedAtMs = grant.StateReleased, t0+10
	if d, _ := DecideAcquire(d.Record, &own, Settings{}, in, t0+10+int64(lim.RequestRetentionMs)-1, lim); d.Outcome != AcquireExisting {
		t.Fatal("forgotten inside retention")
	}
	if d, _ := DecideAcquire(d.Record, &own, Settings{}, in, t0+10+int64(lim.RequestRetentionMs), lim); d.Outcome != AcquirePurge {
		t.Fatal("kept past retention")
	}
}

func TestDecideRenewRelease(t *testing.T) {
	lim := testLimits()
	rec := held("a", 3, t0)
	lease := rec.Holder.Grant.Lease
	d, err := DecideRenew(rec, Settings{}, "a", lease, t0+9_000, lim)
	if err != nil || d.Holder.ExpiresAtMs != t0+19_000 {
		t.Fatalf("renew: %v %d", err, d.Holder.ExpiresAtMs)
	}
	if _, err := DecideRenew(rec, Settings{}, "b", lease, t0+1, lim); !errors.Is(err, wire.ErrNotHolder) {
		t.Fatalf("renew by another owner: %v", err)
	}
	if _, err := DecideRenew(rec, Settings{}, "a", lease, t0+10_000, lim); !errors.Is(err, wire.ErrLeaseExpired) {
		t.Fatalf("renew at expiresAt: %v", err)
	}
	rel, err := DecideRelease(rec, Settings{}, "a", lease, t0+100, lim, none)
	if err != nil || rel.Record.Holder != nil || rel.Record.FreeAtMs != t0+100 || len(rel.Entries) != 0 || rel.Record.Ended[len(rel.Record.Ended)-1].State != grant.StateReleased {
		t.Fatalf("release: %v %+v", err, rel.Record)
	}
	// No lock-delay after a release: the next acquire at the same instant wins.
	if g, err := DecideAcquire(rel.Record, nil, Settings{}, input("b", "r", false, 0), t0+100, lim); err != nil || g.Body.FenceToken != 4 {
		t.Fatalf("acquire after release: %v", err)
	}
	if again, err := DecideRelease(rel.Record, Settings{}, "a", lease, t0+200, lim, none); err != nil || again.Record != nil {
		t.Fatalf("second release: %v", err)
	}
	if _, err := DecideRelease(rec, Settings{}, "a", lease, t0+10_000, lim, none); !errors.Is(err, wire.ErrLeaseExpired) {
		t.Fatalf("release after expiry: %v", err)
	}
	if _, err := DecideRenew(rec, Settings{RevokedBelowEpoch: 6}, "a", lease, t0+1, lim); !errors.Is(err, wire.ErrEpochRevoked) {
		t.Fatalf("renew under a revoked registry epoch: %v", err)
	}
}

func TestStatusValidUntil(t *testing.T) {
	lim := testLimits()
	exp := t0 + 10_000
	for _, c := range []struct {
		state grant.State
		now   int64
		want  int64
	}{
		{grant.StateHeld, t0, t0 + int64(lim.StatusProofTTLMs)},
		{grant.StateHeld, exp - 1000, exp - int64(lim.ClockSkewMaxMs)},
		{grant.StateHeld, exp - 100, exp - 100}, // never before now
		{grant.StateReleased, exp, exp + int64(lim.StatusProofTTLMs)},
	} {
		if got := StatusValidUntil(c.state, exp, c.now, lim); got != c.want {
			t.Errorf("%s at %d: validUntil %d, want %d", c.state, c.now-t0, got-t0, c.want-t0)
		}
	}
}

func TestAdminRaiseOnly(t *testing.T) {
	rec := &Record{Floor: 10, PolicyGeneration: 4}
	for _, f := range []uint64{9, 10} {
		if next, err := DecideRaiseFloor("r", rec, Settings{}, f); next != nil || err != nil {
			t.Fatalf("floor lowered or rewritten: %v %v", next, err)
		}
	}
	if next, _ := DecideRaiseFloor("r", rec, Settings{}, 11); next == nil || next.Floor != 11 || rec.Floor != 10 {
		t.Fatal("floor not raised (or input mutated)")
	}
	if _, err := DecidePolicyGeneration(rec, 3); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("policy lowered: %v", err)
	}
	if next, _ := DecidePolicyGeneration(rec, 5); next == nil || next.PolicyGeneration != 5 {
		t.Fatal("policy not raised")
	}
	if DecideRevoke(Settings{RevokedBelowEpoch: 3}, 2) != nil {
		t.Fatal("revocation lowered")
	}
}

func TestReleaseHandsOffToHead(t *testing.T) {
	lim := testLimits()
	rec := held("a", 3, t0)
	d, _ := DecideAcquire(rec, nil, Settings{}, input("b", "rb", true, t0+5000), t0+1, lim)
	d, _ = DecideAcquire(d.Record, nil, Settings{}, input("c", "rc", true, t0+5000), t0+2, lim)
	lease := rec.Holder.Grant.Lease
	rel, err := DecideRelease(d.Record, Settings{}, "a", lease, t0+3, lim, none)
	if err != nil {
		t.Fatal(err)
	}
	h := rel.Record.Holder
	if h == nil || h.Grant.Owner != "b" || h.Grant.FenceToken != 4 || len(rel.Record.Waiters) != 1 || rel.Record.Waiters[0].Owner != "c" {
		t.Fatalf("handoff: holder %+v waiters %+v", h, rel.Record.Waiters)
	}
	if len(rel.Entries) != 1 || rel.Entries[0].Key.Owner != "b" || rel.Entries[0].Entry.State != grant.StateHeld {
		t.Fatalf("a handoff writes the head's entry and no other: %+v", rel.Entries)
	}
	// b, looking at the record before reading its entry, learns it holds.
	if got, _ := DecideAcquire(rel.Record, nil, Settings{}, input("b", "rb", true, t0+5000), t0+4, lim); got.Outcome != AcquireHanded {
		t.Fatalf("head sees outcome %d", got.Outcome)
	}
	// If b's request ID is taken, the release only frees; b claims later.
	// Another request's entry changes nothing.
	if rel, _ = DecideRelease(d.Record, Settings{}, "a", lease, t0+3, lim, []RequestKey{{Owner: "c", RequestID: "rc"}}); rel.Record.Holder == nil {
		t.Fatal("another request's entry stopped the handoff to b")
	}
	rel, _ = DecideRelease(d.Record, Settings{}, "a", lease, t0+3, lim, []RequestKey{{Owner: "b", RequestID: "rb"}})
	if rel.Record.Holder != nil || len(rel.Record.Waiters) != 2 {
		t.Fatalf("handoff over a taken request ID: %+v", rel.Record.Holder)
	}
	// After an expiry nobody hands off: lock-delay first, then the head claims.
	if got, err := DecideAcquire(d.Record, nil, Settings{}, input("b", "rb", true, t0+20_000), t0+10_000, lim); err != nil || got.Outcome != AcquireQueued {
		t.Fatalf("head at expiry: outcome %d, %v", got.Outcome, err)
	}
}

// TestCancelAfterHandoffKeepsTheGrant: b's call gave up just as the lease
// reached it. The lease stays b's: another call of b's request (its retry
// after the timeout) may already hold the grant, and releasing it on
// would make c a second holder. A retry gets it; otherwise it expires.
func TestCancelAfterHandoffKeepsTheGrant(t *testing.T) {
	lim := testLimits()
	rec := held("a", 3, t0)
	d, _ := DecideAcquire(rec, nil, Settings{}, input("b", "rb", true, t0+5000), t0+1, lim)
	d, _ = DecideAcquire(d.Record, nil, Settings{}, input("c", "rc", true, t0+5000), t0+2, lim)
	rel, _ := DecideRelease(d.Record, Settings{}, "a", rec.Holder.Grant.Lease, t0+3, lim, none)
	c := DecideCancelWait(rel.Record, Settings{}, RequestKey{Owner: "b", RequestID: "rb"}, 1<<62, t0+4, lim)
	if c.Record != nil {
		t.Fatalf("b's withdrawal after the handoff changed the record: holder %+v", c.Record.Holder)
	}
	if h := rel.Record.Holder; h == nil || h.Grant.Owner != "b" || h.Grant.FenceToken != 4 {
		t.Fatalf("after the release: holder %+v, want b at fence 4", h)
	}
}

// TestChangesAt: a queued waiter looks again at each instant its record
// changes with no write, the nearest first, and never at one behind it.
func TestChangesAt(t *testing.T) {
	lim := testLimits()
	h := held("a", 3, t0) // expires at t0+10_000
	free := &Record{HighestFence: 3, FreeAtMs: t0 + 100}
	for _, c := range []struct {
		name string
		rec  *Record
		now  int64
		want int64
		ok   bool
	}{
		{"live holder: its expiry", h, t0, t0 + 10_000, true},
		{"expired holder: lock-delay's end", h, t0 + 10_000, t0 + 10_000 + int64(lim.LockDelayMs), true},
		{"free soon: the instant it is free", free, t0, t0 + 100, true},
		{"free: half the claim window", free, t0 + 100, t0 + 100 + int64(lim.HandoffClaimMs)/2, true},
		{"free: the claim window's end", free, t0 + 100 + int64(lim.HandoffClaimMs)/2, t0 + 100 + int64(lim.HandoffClaimMs), true},
		{"nothing ahead", free, t0 + 100 + int64(lim.HandoffClaimMs), 0, false},
		{"empty record", &Record{}, t0, 0, false},
	} {
		if at, ok := ChangesAt(c.rec, c.now, lim); at != c.want || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.name, at, ok, c.want, c.ok)
		}
	}
}

// A plain acquire may not name a request ID reserved for a lock set's
// members (wire.SetRequestIDPrefix): it would collide with a member's
// grant.
func TestAcquireRefusesSetRequestIDs(t *testing.T) {
	req := wire.AcquireRequest{Resource: "res/1", OperationID: "op", OperationClass: "settle", RequestID: wire.MemberRequestID("x", 0)}
	if _, err := NewAcquireInput("a", req, t0, testLimits()); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("reserved request ID: %v, want ErrInvalid", err)
	}
	req.RequestID = "settle.1"
	if _, err := NewAcquireInput("a", req, t0, testLimits()); err != nil {
		t.Fatalf("unreserved request ID: %v", err)
	}
}
