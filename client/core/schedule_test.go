// This file proves the pure lease timing: what falls due when (deadline
// before renewal before proof refresh, the deadline in RENEWING too), the
// renewal interval as a share of the local life with jitter, a refresh
// only while it can help, the status proof's usable window with its
// margin, and the shortest TTL the margins allow.
package core_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/wire"
)

func TestScheduleCheck(t *testing.T) {
	o := client.Options{}.Limits()
	t0 := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	ttl := 10 * time.Second // local life 9 s: renew at 3 s
	s := core.Confirmed(o, t0, ttl, t0.Add(2*time.Second), 0)
	if !s.RenewAt.Equal(t0.Add(3*time.Second)) || !s.Deadline.Equal(t0.Add(9*time.Second)) {
		t.Fatalf("renewAt %s deadline %s", s.RenewAt, s.Deadline)
	}
	if j := core.Confirmed(o, t0, ttl, s.ProofUntil, 1); !j.RenewAt.Equal(t0.Add(3300 * time.Millisecond)) {
		t.Fatalf("jitter +1: renewAt %s, want +10%%", j.RenewAt)
	}
	cases := []struct {
		state core.LeaseState
		at    time.Duration
		want  core.Due
		wake  time.Duration // 0: at once; -1: never
	}{
		{core.StateHeld, 0, core.DueNothing, 1 * time.Second}, // proof refresh at validUntil − 1s
		{core.StateHeld, 1 * time.Second, core.DueRefresh, 0},
		{core.StateHeld, 3 * time.Second, core.DueRenew, 0},
		{core.StateHeld, 9 * time.Second, core.DueDeadline, 0},
		{core.StateRenewing, 8 * time.Second, core.DueNothing, 9 * time.Second}, // a call in flight: only the deadline
		{core.StateRenewing, 9 * time.Second, core.DueDeadline, 0},
		{core.StateExpired, 0, core.DueNothing, -1},
	}
	for _, c := range cases {
		got, wake := s.Check(o, c.state, t0.Add(c.at))
		if got != c.want {
			t.Errorf("%s at +%s: %v, want %v", c.state, c.at, got, c.want)
		}
		if c.wake > 0 && !wake.Equal(t0.Add(c.wake)) || c.wake < 0 && !wake.IsZero() {
			t.Errorf("%s at +%s: wake %s", c.state, c.at, wake)
		}
	}
	if !s.ProofUsable(o, t0.Add(1499*time.Millisecond)) || s.ProofUsable(o, t0.Add(1500*time.Millisecond)) {
		t.Fatal("proof usable window is not validUntil − ProofMargin")
	}
	s.QueryAt = t0.Add(time.Second)
	if got, wake := s.Check(o, core.StateUnknown, t0); got != core.DueNothing || !wake.Equal(s.QueryAt) {
		t.Fatalf("unknown before queryAt: %v %s", got, wake)
	}
	if got, _ := s.Check(o, core.StateUnknown, s.QueryAt); got != core.DueQuery {
		t.Fatalf("unknown at queryAt: %v", got)
	}
}

// TestScheduleRefreshOnlyWhenItHelps: a proof that stays usable up to the
// deadline is not refreshed (the 2 s lease of issue 42: its proof ends at
// the expiry less the skew bound, a refresh would bring the same one),
// and a refresh that moved the proof too little stops refreshing until
// the next renewal, instead of asking again at once.
func TestScheduleRefreshOnlyWhenItHelps(t *testing.T) {
	o := client.Options{}.Limits()
	t0 := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	late := client.Options{RenewFraction: 0.6}.Limits()
	short := core.Confirmed(late, t0, 2*time.Second, t0.Add(1500*time.Millisecond), 0) // deadline 1 s, proof usable until 1 s
	if due, wake := short.Check(late, core.StateHeld, t0.Add(550*time.Millisecond)); due != core.DueNothing ||
		!wake.Equal(t0.Add(600*time.Millisecond)) {
		t.Fatalf("2 s lease at 0.55 s: %v, wake %s; want the renewal at 0.6 s, no refresh at 1.5 − 1 s", due, wake)
	}
	long := core.Confirmed(o, t0, 15*time.Second, t0.Add(2*time.Second), 0)
	if due, _ := long.Check(o, core.StateHeld, t0.Add(time.Second)); due != core.DueRefresh {
		t.Fatalf("15 s lease, proof until 2 s, at 1 s: %v, want a refresh", due)
	}
	same := long.Refreshed(o, t0.Add(2*time.Second+100*time.Millisecond)) // moved 100 ms < lead − margin
	if due, wake := same.Check(o, core.StateHeld, t0.Add(time.Second)); !same.ProofCapped || due != core.DueNothing ||
		!wake.Equal(long.RenewAt) {
		t.Fatalf("after a refresh that moved the proof 100 ms: capped %v, %v, wake %s; want no refresh before the renewal at %s",
			same.ProofCapped, due, wake, long.RenewAt)
	}
	if moved := long.Refreshed(o, t0.Add(3*time.Second)); moved.ProofCapped {
		t.Fatal("a refresh that moved the proof a second marked it capped")
	}
	if again := core.Confirmed(o, t0, 15*time.Second, t0.Add(2*time.Second), 0); again.ProofCapped {
		t.Fatal("a renewal did not clear the cap")
	}
}

func TestTTLMin(t *testing.T) {
	o := client.Options{}.Limits()
	if got := o.TTLMin(); got != 2*time.Second {
		t.Fatalf("default TTLMin %s, want 2s (ExpiryMargin 1s + 4 × 250ms)", got)
	}
	if err := o.CheckTTL(2 * time.Second); err != nil {
		t.Fatalf("2s refused: %v", err)
	}
	err := o.CheckTTL(1999 * time.Millisecond)
	var se *core.SettingsError
	if !errors.As(err, &se) || !errors.Is(err, core.ErrSettings) || !errors.Is(err, wire.ErrTTLOutOfRange) || se.Want != "at least 2s" {
		t.Fatalf("1.999s: %v", err)
	}
	fast := client.Options{CallTimeout: 50 * time.Millisecond, ExpiryMargin: 300 * time.Millisecond, ProofMargin: 100 * time.Millisecond}.Limits()
	if got := fast.TTLMin(); got != 500*time.Millisecond {
		t.Fatalf("fast registry TTLMin %s, want 300ms + max(4 × 50ms, 2 × 100ms) = 500ms", got)
	}
	proofy := client.Options{ProofMargin: 800 * time.Millisecond}.Limits()
	if got := proofy.TTLMin(); got != 2600*time.Millisecond {
		t.Fatalf("ProofMargin 800ms: TTLMin %s, want 1s + 2 × 800ms", got)
	}
}

func TestLimitsCheck(t *testing.T) {
	for name, c := range map[string]struct {
		o       client.Options
		setting string
	}{
		"renewals too late":  {client.Options{RenewFraction: 0.7}, "RenewFraction"},
		"fraction negative":  {client.Options{RenewFraction: -0.1}, "RenewFraction"},
		"jitter one":         {client.Options{RenewJitter: 1}, "RenewJitter"},
		"negative margin":    {client.Options{ExpiryMargin: -time.Second}, "ExpiryMargin"},
		"negative timeout":   {client.Options{CallTimeout: -time.Second}, "CallTimeout"},
		"lost max negative":  {client.Options{AcquireLostMax: -1}, "AcquireLostMax"},
		"negative query gap": {client.Options{QueryInterval: -1}, "QueryInterval"},
	} {
		var se *core.SettingsError
		if err := c.o.Validate(); !errors.As(err, &se) || se.Setting != c.setting || !errors.Is(err, client.ErrSettings) {
			t.Errorf("%s: %v, want a SettingsError on %s", name, err, c.setting)
		}
	}
	if err := (client.Options{RenewFraction: 0.68}).Validate(); err != nil {
		t.Fatalf("0.68 × 1.1 ≤ 3/4 refused: %v", err)
	}
	if err := (client.Options{}).Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
}
