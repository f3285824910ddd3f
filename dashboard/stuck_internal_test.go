// Proves the stuck rules on locks as the registry reports them: a wait
// over the threshold is stuck (the longest one named, with its holder
// and how long it has held), a hold over its threshold is stuck, both
// under is nothing; an exempt class (an election's) is never stuck, nor
// is a waiter whose queueing time is unknown; and the attention line says
// who waited how long behind whom.
package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/wire"
)

func TestStuckRules(t *testing.T) {
	now := time.Date(2026, 7, 19, 2, 14, 30, 0, time.UTC)
	rules := newStuckRules(Config{StuckWaitMs: 120_000, StuckHoldMs: 3_600_000})
	holder := func(class string, heldFor time.Duration) *wire.LockHolder {
		return &wire.LockHolder{Owner: "worker-a", Lease: "l3-1f0c", Fence: 3, OperationClass: class,
			Since: now.Add(-heldFor), ExpiresAt: now.Add(12 * time.Second)}
	}
	waiter := func(owner, class string, waited time.Duration) wire.LockWaiter {
		w := wire.LockWaiter{Owner: owner, OperationClass: class}
		if waited > 0 {
			w.Since = now.Add(-waited)
		}
		return w
	}
	lock := func(h *wire.LockHolder, ws ...wire.LockWaiter) wire.LockStatus {
		return wire.LockStatus{Resource: "jobs/x", Holder: h, HighestFence: 3, Waiters: ws, ReadAt: now}
	}
	free := lock(nil, waiter("worker-b", "settle", 3*time.Minute))
	delayEnds := now.Add(800 * time.Millisecond)
	free.FreeAt = &delayEnds
	for name, c := range map[string]struct {
		ls        wire.LockStatus
		waiter    string // the stuck waiter, "" none
		hold      bool
		attention string // the first attention line, "" none
	}{
		"both under": {lock(holder("settle", 4*time.Minute), waiter("worker-b", "settle", 90*time.Second)), "", false, ""},
		"a wait over": {lock(holder("settle", 4*time.Minute+30*time.Second), waiter("worker-b", "settle", 4*time.Minute+12*time.Second), waiter("worker-c", "settle", time.Minute)),
			"worker-b", false, "bad jobs/x: worker-b has waited 4m12s behind worker-a, held 4m30s (2 waiting in all); stuck after 2m"},
		"the longest wait named": {lock(holder("settle", 10*time.Minute), waiter("worker-c", "settle", 3*time.Minute), waiter("worker-b", "settle", 5*time.Minute)),
			"worker-b", false, "bad jobs/x: worker-b has waited 5m behind worker-a"},
		"a hold over": {lock(holder("settle", 61*time.Minute)), "", true,
			"warn jobs/x: held by worker-a for 1h1m (since 01:13:30 UTC, lease l3-1f0c, fence 3); stuck after 1h"},
		"a hold and a wait over: the wait says both": {lock(holder("settle", 2*time.Hour), waiter("worker-b", "settle", 3*time.Minute)),
			"worker-b", true, "bad jobs/x: worker-b has waited 3m behind worker-a, held 2h; stuck after 2m"},
		"a free resource still queued for":   {free, "worker-b", false, "bad jobs/x: worker-b has waited 3m; nobody holds it (lock-delay 800ms left)"},
		"an election's leader":               {lock(holder("lead", 48*time.Hour)), "", false, ""},
		"an election's standby":              {lock(holder("lead", 48*time.Hour), waiter("worker-b", "lead", 48*time.Hour)), "", false, ""},
		"a worker queued behind a leader":    {lock(holder("lead", 48*time.Hour), waiter("worker-b", "settle", 3*time.Minute)), "worker-b", false, "bad jobs/x: worker-b has waited 3m behind worker-a"},
		"a waiter queued at an unknown time": {lock(holder("settle", time.Minute), waiter("worker-b", "settle", 0)), "", false, ""},
		"free, nobody waits":                 {lock(nil), "", false, ""},
	} {
		r := rules.row(c.ls)
		if r.StuckWaiter != c.waiter || r.StuckHold != c.hold || r.Stuck() != (c.waiter != "" || c.hold) {
			t.Errorf("%s: stuck waiter %q hold %v, want %q %v", name, r.StuckWaiter, r.StuckHold, c.waiter, c.hold)
		}
		var got string
		if a := stuckAttention(r, rules.waitMs, rules.holdMs); len(a) > 0 {
			got = a[0].Level + " " + a[0].Text
			if len(a) > 1 {
				t.Errorf("%s: %d attention lines, want one: %v", name, len(a), a)
			}
		}
		if (c.attention == "") != (got == "") || !strings.HasPrefix(got, c.attention) {
			t.Errorf("%s: attention %q, want %q…", name, got, c.attention)
		}
	}
}

func TestStuckRulesDefaults(t *testing.T) {
	r := newStuckRules(Config{})
	if r.waitMs != StuckWaitMsDefault || r.holdMs != StuckHoldMsDefault || len(r.exempt) != 1 || r.exempt[0] != "lead" {
		t.Errorf("defaults: %+v", r)
	}
	if r := newStuckRules(Config{StuckExemptClasses: []string{}}); len(r.exempt) != 0 {
		t.Errorf("an empty list should exempt none: %+v", r)
	}
}

func TestRowShowsHoldAndLongestWait(t *testing.T) {
	now := time.Date(2026, 7, 19, 2, 14, 30, 0, time.UTC)
	ls := wire.LockStatus{Resource: "jobs/x", HighestFence: 3, Floor: 5, ReadAt: now,
		Holder: &wire.LockHolder{Owner: "worker-a", Lease: "l3", Fence: 3, OperationClass: "settle", Since: now.Add(-time.Minute), ExpiresAt: now.Add(9 * time.Second)},
		Waiters: []wire.LockWaiter{{Owner: "worker-b", Since: now.Add(-20 * time.Second)}, {Owner: "worker-c", Since: now.Add(-30 * time.Second)},
			{Owner: "worker-d", Since: now.Add(-time.Second)}, {Owner: "worker-e", Since: now.Add(-time.Second)}}}
	r := newStuckRules(Config{}).row(ls)
	if r.Holder != "worker-a" || r.HeldForMs != 60_000 || r.LeaseLeftMs != 9000 || r.NextFence != 6 || !r.HeldSince.Equal(now.Add(-time.Minute)) {
		t.Errorf("hold: %+v", r)
	}
	if r.Waiters != 4 || strings.Join(r.WaiterOwners, ",") != "worker-b,worker-c,worker-d" || r.LongestWaiter != "worker-c" || r.LongestWaitMs != 30_000 {
		t.Errorf("waiters: %+v", r)
	}
}

func TestDurationsAsPeopleReadThem(t *testing.T) {
	for v, want := range map[int64]string{800: "800ms", 2940: "2.9s", 252_000: "4m12s", 120_000: "2m", 3_600_000: "1h", 3_660_000: "1h1m", 3_661_000: "1h1m1s", 7_200_500: "2h0m1s"} {
		if got := ms(v); got != want {
			t.Errorf("ms(%d) = %q, want %q", v, got, want)
		}
	}
}
