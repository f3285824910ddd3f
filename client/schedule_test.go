// This file proves the pure lease timing: what falls due when (deadline
// before renewal before proof refresh), the renewal interval with jitter,
// and the status proof's usable window with its margin.
package client

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
)

func TestScheduleCheck(t *testing.T) {
	o := Options{Clock: SystemClock{}}.WithDefaults()
	t0 := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	ttl := 9 * time.Second
	st := &grant.Status{ValidUntil: t0.Add(2 * time.Second)}
	s := Confirmed(o, t0, ttl, st, 0)
	if !s.RenewAt.Equal(t0.Add(3*time.Second)) || !s.Deadline.Equal(t0.Add(8*time.Second)) {
		t.Fatalf("renewAt %s deadline %s", s.RenewAt, s.Deadline)
	}
	if j := Confirmed(o, t0, ttl, st, 1); !j.RenewAt.Equal(t0.Add(3300 * time.Millisecond)) {
		t.Fatalf("jitter +1: renewAt %s, want +10%%", j.RenewAt)
	}
	cases := []struct {
		state State
		at    time.Duration
		want  Due
		wake  time.Duration // 0: at once or never
	}{
		{StateHeld, 0, DueNothing, 1 * time.Second}, // proof refresh at validUntil − 1s
		{StateHeld, 1 * time.Second, DueRefresh, 0},
		{StateHeld, 3 * time.Second, DueRenew, 0},
		{StateHeld, 8 * time.Second, DueDeadline, 0},
		{StateRenewing, 8 * time.Second, DueNothing, -1},
		{StateExpired, 0, DueNothing, -1},
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
	if got, wake := s.Check(o, StateUnknown, t0); got != DueNothing || !wake.Equal(s.QueryAt) {
		t.Fatalf("unknown before queryAt: %v %s", got, wake)
	}
	if got, _ := s.Check(o, StateUnknown, s.QueryAt); got != DueQuery {
		t.Fatalf("unknown at queryAt: %v", got)
	}
}
