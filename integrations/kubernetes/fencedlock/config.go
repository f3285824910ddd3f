package fencedlock

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/grant"
)

// Config is one lock: the registry resource the election is held on, the
// elector's identity, and the elector's three timings — the same three
// values given to leaderelection.LeaderElectionConfig (ElectionConfig
// copies them there) or to controller-runtime's manager.Options.
type Config struct {
	// Resource is the registry resource of the election (a resource ID:
	// the registry's policy and `fencegate status` apply to it, e.g.
	// "election/my-controller"). Required.
	Resource string
	// Identity is the elector's identity, what client-go calls the
	// holder identity (a pod name, hostname_uuid). Required. It is the
	// candidate's name in the election's records, not the registry
	// identity the session authenticates as (several replicas may share
	// that one).
	Identity string
	// LeaseDuration is the lease's TTL at the registry, in whole seconds
	// (the record client-go writes carries whole seconds): how long a
	// leader that stopped renewing keeps the others waiting. Required.
	LeaseDuration time.Duration
	// RenewDeadline is how long client-go's elector retries a failing
	// renewal before it gives up leading. Required.
	RenewDeadline time.Duration
	// RetryPeriod is how often the elector tries to acquire and renews.
	// Required.
	RetryPeriod time.Duration
	// OperationClass is the class of each term's grant (a gate may allow
	// only some). Optional, defaults to client.CampaignClassDefault.
	OperationClass string
	// OnEvent, if set, hears client-go's RecordEvent ("became leader",
	// "stopped leading") with the identity. Optional: the registry
	// keeps no Kubernetes object to attach an event to.
	OnEvent func(identity, event string)
}

// StopSlack is the time the lock leaves between the moment client-go's
// elector gives up at the latest and the lease's local deadline: the
// scheduling of the elector's goroutine once its renew deadline passed.
const StopSlack = 200 * time.Millisecond

// ErrTiming: the lock's Config cannot keep the leader's term within the
// lease (TimingError says which value and the range that works).
var ErrTiming = errors.New("fencedlock: timing cannot work")

// TimingError is a Config value the lock refuses, with the range that
// works and where it comes from. It wraps ErrTiming and client.ErrSettings.
type TimingError struct {
	Setting string // the Config field
	Value   string // as given
	Want    string // the range that works
	Why     string // where the range comes from
}

func (e *TimingError) Error() string {
	return fmt.Sprintf("fencedlock: %s %s cannot work: want %s (%s)", e.Setting, e.Value, e.Want, e.Why)
}

// Unwrap returns ErrTiming and client.ErrSettings.
func (e *TimingError) Unwrap() []error { return []error{ErrTiming, client.ErrSettings} }

// Check refuses a Config no term can be kept under, given the session's
// client options o: every rule names the range that works.
//
// client-go's own rules: LeaseDuration > RenewDeadline > 1.2 × RetryPeriod
// > 0. The lease's: LeaseDuration in whole seconds (client-go's record
// carries seconds), at least client.TTLMin(o) (2 s with the defaults).
//
// The lock's: the elector gives up leading at most RetryPeriod +
// RenewDeadline after the lock first answers a renewal with an error, so
// the lock stops answering yes at the lease's local deadline D −
// (RenewDeadline + RetryPeriod + StopSlack), the stop lead. A lease that
// renews as it should must never come that close to D, or a healthy
// leader would be deposed by its own lock: with Λ = LeaseDuration −
// o.ExpiryMargin the lease's local life, the SDK sends a renewal at most
// RenewFraction × (1 + RenewJitter) × Λ after the last one and hears its
// answer within the lease's call timeout min(CallTimeout, Λ/4), so D is
// never nearer than Λ × (1 − RenewFraction × (1 + RenewJitter)) − that
// timeout, and the stop lead must be at most that (6.67 s for
// RenewDeadline + RetryPeriod at a 15 s LeaseDuration with the default
// options; controller-runtime's 10 s and 2 s need a LeaseDuration of
// 24 s or more).
func (c Config) Check(o client.Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := grant.ValidateResource(c.Resource); err != nil {
		return fmt.Errorf("fencedlock: resource %q: %w: %w", c.Resource, client.ErrSettings, err)
	}
	if c.Identity == "" {
		return fmt.Errorf("fencedlock: Identity is empty: %w: name the candidate (a pod name, hostname_uuid)", client.ErrSettings)
	}
	for _, r := range c.rules(o.Limits()) {
		if !r.ok {
			return &TimingError{Setting: r.setting, Value: r.value.String(), Want: r.want, Why: r.why}
		}
	}
	return nil
}

type rule struct {
	ok                 bool
	setting, want, why string
	value              time.Duration
}

// rules are Check's timing rules, in the order they are reported.
func (c Config) rules(lim core.Limits) []rule {
	ld, rd, rp := c.LeaseDuration, c.RenewDeadline, c.RetryPeriod
	jittered := time.Duration(leaderelection.JitterFactor * float64(rp))
	return []rule{
		{rp > 0, "RetryPeriod", "above 0", "client-go", rp},
		{rd > jittered, "RenewDeadline", fmt.Sprintf("above 1.2 × RetryPeriod (%s)", jittered), "client-go's JitterFactor", rd},
		{ld > rd, "LeaseDuration", fmt.Sprintf("above RenewDeadline (%s)", rd), "client-go", ld},
		{ld%time.Second == 0, "LeaseDuration", "whole seconds", "client-go's record carries leaseDurationSeconds", ld},
		{ld >= lim.TTLMin(), "LeaseDuration", fmt.Sprintf("at least %s", lim.TTLMin()), "client.TTLMin: the shortest lease the session's margins keep", ld},
		{c.stopLead() <= HealthyLead(lim, ld), "RenewDeadline + RetryPeriod", fmt.Sprintf("at most %s at LeaseDuration %s (or a longer LeaseDuration)", HealthyLead(lim, ld)-StopSlack, ld),
			"the lock stops answering yes RenewDeadline + RetryPeriod + StopSlack before the lease's local deadline, and a lease that renews as it should comes no nearer to it than HealthyLead", rd + rp},
	}
}

// HealthyLead is the nearest a lease of ttl under lim that renews as it
// should comes to its local deadline: its local life Λ less the latest
// renewal (RenewFraction × (1 + RenewJitter) × Λ) less that renewal's call
// timeout. The lock's stop lead must not exceed it (Check).
func HealthyLead(lim core.Limits, ttl time.Duration) time.Duration {
	life := lim.Life(ttl)
	latest := time.Duration(lim.RenewFraction * (1 + lim.RenewJitter) * float64(life))
	return life - latest - lim.LeaseCallTimeout(ttl)
}

// stopLead is how long before the lease's local deadline the lock stops
// answering yes to a renewal: RenewDeadline + RetryPeriod + StopSlack.
func (c Config) stopLead() time.Duration { return c.RenewDeadline + c.RetryPeriod + StopSlack }
