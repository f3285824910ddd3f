// This file proves the pure core's decisions with table tests at fixed
// instants: fences, lock-delay after expiry but not release, FIFO order and
// the vanished-head skip, revocation, floors and request-ID idempotency. No
// store, no clock: the same inputs always give the same outputs.
package registry

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

const t0 = int64(1_780_000_000_000) // a fixed registry instant, ms

func testCfg() Config { return DefaultConfig(5) }

// none reports every request ID free.
func none(RequestKey) bool { return false }

// tk is a queued ticket for owner's request id.
func tk(owner, id string, deadline int64) Waiter {
	return input(owner, id, true, deadline).ticket("sha256:params", 0, testCfg())
}

func input(owner, id string, wait bool, deadline int64) acquireInput {
	return acquireInput{
		owner: owner, ttlMs: 10_000, wait: wait, deadlineMs: deadline,
		req: wire.AcquireRequest{Resource: "res/1", OperationID: "op-" + id, OperationClass: "settle", RequestID: id},
	}
}

// held returns a record held by owner since at, with fence.
func held(owner string, fence uint64, at int64) *Record {
	in := input(owner, "req-"+owner, false, 0)
	d, err := decideAcquire(&Record{HighestFence: fence - 1}, nil, Settings{}, in, at, testCfg())
	if err != nil || d.outcome != outGranted {
		panic("fixture")
	}
	return d.record
}

func TestDecideAcquire(t *testing.T) {
	cfg := testCfg()
	expiry := t0 + 10_000
	cases := []struct {
		name    string
		rec     *Record
		set     Settings
		in      acquireInput
		now     int64
		want    acquireOutcome
		wantErr error
		fence   uint64
		waiters int
	}{
		{"first grant", &Record{}, Settings{}, input("b", "r", false, 0), t0, outGranted, nil, 1, 0},
		{"floor above highest", &Record{HighestFence: 3, Floor: 40}, Settings{}, input("b", "r", false, 0), t0, outGranted, nil, 41, 0},
		{"highest above floor", &Record{HighestFence: 50, Floor: 40}, Settings{}, input("b", "r", false, 0), t0, outGranted, nil, 51, 0},
		{"held: busy", held("a", 7, t0), Settings{}, input("b", "r", false, 0), t0 + 1, 0, wire.ErrBusy, 0, 0},
		{"held: queue", held("a", 7, t0), Settings{}, input("b", "r", true, t0+5000), t0 + 1, outQueued, nil, 0, 1},
		{"expiry is at expiresAt, then lock-delay", held("a", 7, t0), Settings{}, input("b", "r", false, 0), expiry, 0, wire.ErrBusy, 0, 0},
		{"lock-delay ends", held("a", 7, t0), Settings{}, input("b", "r", false, 0), expiry + int64(cfg.LockDelayMs), outGranted, nil, 8, 0},
		{"one ms before expiry", held("a", 7, t0), Settings{}, input("b", "r", false, 0), expiry - 1, 0, wire.ErrBusy, 0, 0},
		{"revoked holder frees at once", held("a", 7, t0), Settings{RevokedBelowEpoch: 6}, input("b", "r", false, 0), t0 + 1, 0, wire.ErrEpochRevoked, 0, 0},
		{"wait deadline passed", held("a", 7, t0), Settings{}, input("b", "r", true, t0+1), t0 + 1, 0, wire.ErrWaitTimeout, 0, 0},
		{"free but others queued: no jumping", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0+9000)}, FreeAtMs: t0}, Settings{}, input("b", "r", false, 0), t0 + 1, 0, wire.ErrBusy, 0, 1},
		{"head of queue on free resource", &Record{HighestFence: 2, Waiters: []Waiter{tk("b", "r", t0+9000), tk("x", "rx", t0+9000)}, FreeAtMs: t0}, Settings{}, input("b", "r", true, t0+9000), t0 + 1, outGranted, nil, 3, 1},
		{"head in its grace keeps its place", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0)}, FreeAtMs: t0}, Settings{}, input("b", "r", false, 0), t0 + 1, 0, wire.ErrBusy, 0, 1},
		{"dead head is pruned", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0)}, FreeAtMs: t0}, Settings{}, input("b", "r", false, 0), t0 + int64(cfg.WaiterGraceMs), outGranted, nil, 3, 0},
		{"vanished head skipped after claim window", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0+99_000), tk("b", "r", t0+99_000)}, FreeAtMs: t0}, Settings{}, input("b", "r", true, t0+99_000), t0 + int64(cfg.HandoffClaimMs), outGranted, nil, 3, 0},
		{"head keeps its window", &Record{HighestFence: 2, Waiters: []Waiter{tk("x", "rx", t0+99_000), tk("b", "r", t0+99_000)}, FreeAtMs: t0}, Settings{}, input("b", "r", true, t0+99_000), t0 + int64(cfg.HandoffClaimMs) - 1, outQueued, nil, 0, 2},
		{"queue full", &Record{Holder: held("a", 1, t0).Holder, HighestFence: 1, Waiters: make([]Waiter, cfg.WaitersPerResourceMax)}, Settings{}, input("b", "r", true, t0+5000), t0 + 1, 0, wire.ErrWaitersFull, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := range c.rec.Waiters {
				if c.rec.Waiters[i].Owner == "" {
					c.rec.Waiters[i] = tk("q", "q"+string(rune('a'+i%26)), t0+99_000)
				}
			}
			before := string(EncodeRecord(c.rec))
			d, err := decideAcquire(c.rec, nil, c.set, c.in, c.now, cfg)
			if string(EncodeRecord(c.rec)) != before {
				t.Fatal("decision mutated its input")
			}
			if c.wantErr != nil || err != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				return
			}
			if d.outcome != c.want {
				t.Fatalf("outcome %d, want %d", d.outcome, c.want)
			}
			if c.want == outGranted {
				if d.body.FenceToken != c.fence || d.record.HighestFence != c.fence || d.record.Holder.Grant.FenceToken != c.fence {
					t.Fatalf("fence %d, want %d", d.body.FenceToken, c.fence)
				}
				if _, err := d.body.Grant(1); err != nil {
					t.Fatalf("granted body invalid: %v", err)
				}
			}
			if d.record != nil && len(d.record.Waiters) != c.waiters {
				t.Fatalf("%d waiters, want %d", len(d.record.Waiters), c.waiters)
			}
		})
	}
}

func TestDecideAcquireRevokedHolderThenGrant(t *testing.T) {
	cfg := testCfg()
	cfg.IssuerEpoch = 9
	rec := held("a", 7, t0) // epoch 5
	d, err := decideAcquire(rec, nil, Settings{RevokedBelowEpoch: 6}, input("b", "r", false, 0), t0+1, cfg)
	if err != nil || d.outcome != outGranted || d.body.FenceToken != 8 {
		t.Fatalf("after revocation a new-epoch registry grants at once: %v %+v", err, d)
	}
	if len(d.entries) != 1 || d.entries[0].key.Owner != "b" {
		t.Fatalf("a grant writes its own entry and no other: %+v", d.entries)
	}
	if e, ok := findEnded(d.record, rec.Holder.Grant.Lease); !ok || e.State != grant.StateRevoked {
		t.Fatalf("revoked holder not ended in the record: %+v", d.record.Ended)
	}
}

func TestDecideAcquireIdempotent(t *testing.T) {
	cfg := testCfg()
	in := input("a", "r1", false, 0)
	d, _ := decideAcquire(&Record{}, nil, Settings{}, in, t0, cfg)
	own := d.entries[len(d.entries)-1].entry
	again, err := decideAcquire(d.record, &own, Settings{}, in, t0+5, cfg)
	if err != nil || again.outcome != outExisting || again.record != nil {
		t.Fatalf("retry: %v %+v", err, again)
	}
	other := in
	other.ttlMs = 20_000
	if _, err := decideAcquire(d.record, &own, Settings{}, other, t0+5, cfg); !errors.Is(err, wire.ErrRequestMismatch) {
		t.Fatalf("changed TTL: %v", err)
	}
	own.State, own.EndedAtMs = grant.StateReleased, t0+10
	if d, _ := decideAcquire(d.record, &own, Settings{}, in, t0+10+int64(cfg.RequestRetentionMs)-1, cfg); d.outcome != outExisting {
		t.Fatal("forgotten inside retention")
	}
	if d, _ := decideAcquire(d.record, &own, Settings{}, in, t0+10+int64(cfg.RequestRetentionMs), cfg); d.outcome != outPurge {
		t.Fatal("kept past retention")
	}
}

func TestDecideRenewRelease(t *testing.T) {
	cfg := testCfg()
	rec := held("a", 3, t0)
	lease := rec.Holder.Grant.Lease
	d, err := decideRenew(rec, Settings{}, "a", lease, t0+9_000, cfg)
	if err != nil || d.holder.ExpiresAtMs != t0+19_000 {
		t.Fatalf("renew: %v %d", err, d.holder.ExpiresAtMs)
	}
	if _, err := decideRenew(rec, Settings{}, "b", lease, t0+1, cfg); !errors.Is(err, wire.ErrNotHolder) {
		t.Fatalf("renew by another owner: %v", err)
	}
	if _, err := decideRenew(rec, Settings{}, "a", lease, t0+10_000, cfg); !errors.Is(err, wire.ErrLeaseExpired) {
		t.Fatalf("renew at expiresAt: %v", err)
	}
	rel, err := decideRelease(rec, Settings{}, "a", lease, t0+100, cfg, none)
	if err != nil || rel.record.Holder != nil || rel.record.FreeAtMs != t0+100 || len(rel.entries) != 0 || rel.record.Ended[len(rel.record.Ended)-1].State != grant.StateReleased {
		t.Fatalf("release: %v %+v", err, rel.record)
	}
	// No lock-delay after a release: the next acquire at the same instant wins.
	if g, err := decideAcquire(rel.record, nil, Settings{}, input("b", "r", false, 0), t0+100, cfg); err != nil || g.body.FenceToken != 4 {
		t.Fatalf("acquire after release: %v", err)
	}
	if again, err := decideRelease(rel.record, Settings{}, "a", lease, t0+200, cfg, none); err != nil || again.record != nil {
		t.Fatalf("second release: %v", err)
	}
	if _, err := decideRelease(rec, Settings{}, "a", lease, t0+10_000, cfg, none); !errors.Is(err, wire.ErrLeaseExpired) {
		t.Fatalf("release after expiry: %v", err)
	}
	if _, err := decideRenew(rec, Settings{RevokedBelowEpoch: 6}, "a", lease, t0+1, cfg); !errors.Is(err, wire.ErrEpochRevoked) {
		t.Fatalf("renew under a revoked registry epoch: %v", err)
	}
}

func TestStatusValidUntil(t *testing.T) {
	cfg := testCfg()
	exp := t0 + 10_000
	for _, c := range []struct {
		state grant.State
		now   int64
		want  int64
	}{
		{grant.StateHeld, t0, t0 + int64(cfg.StatusProofTTLMs)},
		{grant.StateHeld, exp - 1000, exp - int64(cfg.ClockSkewMaxMs)},
		{grant.StateHeld, exp - 100, exp - 100}, // never before now
		{grant.StateReleased, exp, exp + int64(cfg.StatusProofTTLMs)},
	} {
		if got := statusValidUntil(c.state, exp, c.now, cfg); got != c.want {
			t.Errorf("%s at %d: validUntil %d, want %d", c.state, c.now-t0, got-t0, c.want-t0)
		}
	}
}

func TestAdminRaiseOnly(t *testing.T) {
	rec := &Record{Floor: 10, PolicyGeneration: 4}
	for _, f := range []uint64{9, 10} {
		if next, err := decideRaiseFloor("r", rec, Settings{}, f); next != nil || err != nil {
			t.Fatalf("floor lowered or rewritten: %v %v", next, err)
		}
	}
	if next, _ := decideRaiseFloor("r", rec, Settings{}, 11); next == nil || next.Floor != 11 || rec.Floor != 10 {
		t.Fatal("floor not raised (or input mutated)")
	}
	if _, err := decidePolicyGeneration(rec, 3); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("policy lowered: %v", err)
	}
	if next, _ := decidePolicyGeneration(rec, 5); next == nil || next.PolicyGeneration != 5 {
		t.Fatal("policy not raised")
	}
	if decideRevoke(Settings{RevokedBelowEpoch: 3}, 2) != nil {
		t.Fatal("revocation lowered")
	}
}

func TestReleaseHandsOffToHead(t *testing.T) {
	cfg := testCfg()
	rec := held("a", 3, t0)
	d, _ := decideAcquire(rec, nil, Settings{}, input("b", "rb", true, t0+5000), t0+1, cfg)
	d, _ = decideAcquire(d.record, nil, Settings{}, input("c", "rc", true, t0+5000), t0+2, cfg)
	lease := rec.Holder.Grant.Lease
	rel, err := decideRelease(d.record, Settings{}, "a", lease, t0+3, cfg, none)
	if err != nil {
		t.Fatal(err)
	}
	h := rel.record.Holder
	if h == nil || h.Grant.Owner != "b" || h.Grant.FenceToken != 4 || len(rel.record.Waiters) != 1 || rel.record.Waiters[0].Owner != "c" {
		t.Fatalf("handoff: holder %+v waiters %+v", h, rel.record.Waiters)
	}
	if len(rel.entries) != 1 || rel.entries[0].key.Owner != "b" || rel.entries[0].entry.State != grant.StateHeld {
		t.Fatalf("a handoff writes the head's entry and no other: %+v", rel.entries)
	}
	// b, looking at the record before reading its entry, learns it holds.
	if got, _ := decideAcquire(rel.record, nil, Settings{}, input("b", "rb", true, t0+5000), t0+4, cfg); got.outcome != outHanded {
		t.Fatalf("head sees outcome %d", got.outcome)
	}
	// If b's request ID is taken, the release only frees; b claims later.
	rel, _ = decideRelease(d.record, Settings{}, "a", lease, t0+3, cfg, func(RequestKey) bool { return true })
	if rel.record.Holder != nil || len(rel.record.Waiters) != 2 {
		t.Fatalf("handoff over a taken request ID: %+v", rel.record.Holder)
	}
	// After an expiry nobody hands off: lock-delay first, then the head claims.
	if got, err := decideAcquire(d.record, nil, Settings{}, input("b", "rb", true, t0+20_000), t0+10_000, cfg); err != nil || got.outcome != outQueued {
		t.Fatalf("head at expiry: outcome %d, %v", got.outcome, err)
	}
}

// TestCancelAfterHandoffKeepsTheGrant: b's call gave up just as the lease
// reached it. The lease stays b's: another call of b's request (its retry
// after the timeout) may already hold the grant, and releasing it on
// would make c a second holder. A retry gets it; otherwise it expires.
func TestCancelAfterHandoffKeepsTheGrant(t *testing.T) {
	cfg := testCfg()
	rec := held("a", 3, t0)
	d, _ := decideAcquire(rec, nil, Settings{}, input("b", "rb", true, t0+5000), t0+1, cfg)
	d, _ = decideAcquire(d.record, nil, Settings{}, input("c", "rc", true, t0+5000), t0+2, cfg)
	rel, _ := decideRelease(d.record, Settings{}, "a", rec.Holder.Grant.Lease, t0+3, cfg, none)
	c := decideCancelWait(rel.record, Settings{}, RequestKey{Owner: "b", RequestID: "rb"}, 1<<62, t0+4, cfg)
	if c.record != nil {
		t.Fatalf("b's withdrawal after the handoff changed the record: holder %+v", c.record.Holder)
	}
	if h := rel.record.Holder; h == nil || h.Grant.Owner != "b" || h.Grant.FenceToken != 4 {
		t.Fatalf("after the release: holder %+v, want b at fence 4", h)
	}
}
