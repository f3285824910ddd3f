// Proves that Config.Check refuses every timing no term can be kept
// under, naming the value and the range that works, and accepts the
// edge of each range: client-go's own rules (RetryPeriod above 0,
// RenewDeadline above 1.2 × RetryPeriod, LeaseDuration above
// RenewDeadline), whole-second LeaseDuration at least client.TTLMin, and
// the lock's stop lead within HealthyLead.
package fencedlock

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
)

func TestCheckNamesTheRangeThatWorks(t *testing.T) {
	base := Config{Resource: "election/c", Identity: "pod-0"}
	timings := func(ld, rd, rp time.Duration) Config {
		c := base
		c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = ld, rd, rp
		return c
	}
	var o client.Options
	lim := o.Limits()
	// The longest RenewDeadline + RetryPeriod a 15 s lease allows.
	edge := HealthyLead(lim, 15*time.Second) - StopSlack
	for _, tc := range []struct {
		name    string
		c       Config
		setting string // "" accepted
		want    string // in the error
	}{
		{"stories' timings", storyTimings, "", ""},
		{"controller-runtime's 10 s and 2 s at 24 s", timings(24*time.Second, 10*time.Second, 2*time.Second), "", ""},
		{"stop lead at the edge", timings(15*time.Second, edge-time.Second, time.Second), "", ""},
		{"stop lead 1 ms past the edge", timings(15*time.Second, edge-time.Second+time.Millisecond, time.Second), "RenewDeadline + RetryPeriod", "at most " + edge.String()},
		{"client-go's defaults 15 s, 10 s, 2 s", timings(15*time.Second, 10*time.Second, 2*time.Second), "RenewDeadline + RetryPeriod", "at most " + edge.String()},
		{"controller-runtime's 10 s and 2 s at 23 s", timings(23*time.Second, 10*time.Second, 2*time.Second), "RenewDeadline + RetryPeriod", "or a longer LeaseDuration"},
		{"no RetryPeriod", timings(6*time.Second, time.Second, 0), "RetryPeriod", "above 0"},
		{"RenewDeadline at 1.2 × RetryPeriod", timings(6*time.Second, 1200*time.Millisecond, time.Second), "RenewDeadline", "above 1.2 × RetryPeriod (1.2s)"},
		{"LeaseDuration at RenewDeadline", timings(2*time.Second, 2*time.Second, time.Second), "LeaseDuration", "above RenewDeadline (2s)"},
		{"LeaseDuration not whole seconds", timings(6500*time.Millisecond, time.Second, 300*time.Millisecond), "LeaseDuration", "whole seconds"},
		{"LeaseDuration under TTLMin", timings(time.Second, 500*time.Millisecond, 100*time.Millisecond), "LeaseDuration", "at least " + lim.TTLMin().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			c.Resource, c.Identity = base.Resource, base.Identity
			err := c.Check(o)
			if tc.setting == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var te *TimingError
			if !errors.As(err, &te) || !errors.Is(err, ErrTiming) || !errors.Is(err, client.ErrSettings) {
				t.Fatalf("got %v, want a *TimingError wrapping ErrTiming and client.ErrSettings", err)
			}
			if te.Setting != tc.setting || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q (setting %s), want setting %s and %q in it", err, te.Setting, tc.setting, tc.want)
			}
		})
	}
	for _, c := range []Config{{Identity: "pod-0"}, {Resource: "election/c"}} {
		c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = storyTimings.LeaseDuration, storyTimings.RenewDeadline, storyTimings.RetryPeriod
		if err := c.Check(o); !errors.Is(err, client.ErrSettings) {
			t.Errorf("%+v: got %v, want client.ErrSettings", c, err)
		}
	}
}

// The story timings' stop lead sits within HealthyLead, with the slack
// the doc comment of storyTimings names.
func TestHealthyLeadOfTheStoryTimings(t *testing.T) {
	var o client.Options
	if got, want := HealthyLead(o.Limits(), storyTimings.LeaseDuration).Round(10*time.Millisecond), 1920*time.Millisecond; got != want {
		t.Fatalf("HealthyLead(6s) = %s, want %s", got, want)
	}
}
