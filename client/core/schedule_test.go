// This file proves the pure lease timing: what falls due when (deadline
// before renewal before proof refresh), the renewal interval with jitter,
// and the status proof's usable window with its margin.
package core_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
)

func TestScheduleCheck(t *testing.T) {
	o := client.Options{}.Limits()
	t0 := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	ttl := 9 * time.Second
	st := &grant.Status{ValidUntil: t0.Add(2 * time.Second)}
	s := core.Confirmed(o, t0, ttl, st.ValidUntil, 0)
	if !s.RenewAt.Equal(t0.Add(3*time.Second)) || !s.Deadline.Equal(t0.Add(8*time.Second)) {
		t.Fatalf("renewAt %s deadline %s", s.RenewAt, s.Deadline)
	}
	if j := core.Confirmed(o, t0, ttl, st.ValidUntil, 1); !j.RenewAt.Equal(t0.Add(3300 * time.Millisecond)) {
		t.Fatalf("jitter +1: renewAt %s, want +10%%", j.RenewAt)
	}
	cases := []struct {
		state core.State
		at    time.Duration
		want  core.Due
		wake  time.Duration // 0: at once or never
	}{
		{core.StateHeld, 0, core.DueNothing, 1 * time.Second}, // proof refresh at validUntil − 1s
		{core.StateHeld, 1 * time.Second, core.DueRefresh, 0},
		{core.StateHeld, 3 * time.Second, core.DueRenew, 0},
		{core.StateHeld, 8 * time.Second, core.DueDeadline, 0},
		{core.StateRenewing, 8 * time.Second, core.DueNothing, -1},
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
