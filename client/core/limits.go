package core

import (
	"fmt"
	"time"
)

// Limits are the cores' named time limits: client.Options with its
// defaults filled gives them (client.Options documents each, with its
// default and why). The cores read nothing else: no clock, no rand.
type Limits struct {
	RenewFraction    float64       // renew when this fraction of the local life (TTL − ExpiryMargin) has passed since the last confirmed renewal was sent
	RenewJitter      float64       // spread renewals by ± this fraction of the interval
	CallTimeout      time.Duration // a call without an answer after this long is lost (a lease's calls: at most a quarter of its local life)
	ExpiryMargin     time.Duration // the local deadline is the lease's start + TTL − this
	ProofMargin      time.Duration // an envelope needs a status proof valid this long ahead
	ProofRefreshLead time.Duration // refresh the status proof this long before it lapses
	QueryInterval    time.Duration // while OWNERSHIP_UNKNOWN, ask again after this long
	AcquireMargin    time.Duration // an unanswered acquire is presumed over TTL + wait + this after its last send
	AcquireLostMax   int           // calls in a row without an answer before an acquire stops
	DrainMargin      time.Duration // a release waits for unsettled envelopes' proofs plus this
}

// The acquire core's backoff between calls after an answer that says
// "nothing changed, ask again" or none at all: doubling, jittered, from
// AcquireBackoffMin to AcquireBackoffMax.
const (
	AcquireBackoffMin = 100 * time.Millisecond
	AcquireBackoffMax = 2 * time.Second
)

// The lease clock's fixed proportions (docs/guarantees.md, "The lease
// clock", derives them).
const (
	// CallsPerLife: a lease's calls time out after at most its local life
	// (TTL − ExpiryMargin) divided by this, so that the latest renewal
	// (RenewFraction × (1 + RenewJitter) of the life) plus its whole
	// timeout ends by the deadline whenever RenewLatestMax holds.
	CallsPerLife = 4
	// RenewLatestMax bounds RenewFraction × (1 + RenewJitter): the latest
	// renewal goes at most this share into the local life, so its answer,
	// timely by a timeout of a quarter of the life, lands before the
	// deadline.
	RenewLatestMax = 1 - 1.0/CallsPerLife
	// CallTimeoutFloor is the shortest call timeout the TTL minimum lets a
	// lease fall to (unless CallTimeout itself is shorter): a registry
	// round trip (an HTTP call and a store commit) is given at least this.
	CallTimeoutFloor = 250 * time.Millisecond
)

// Life is a lease's local life: how long after the send of its last
// confirmed renewal it may produce effects, TTL − ExpiryMargin.
func (o Limits) Life(ttl time.Duration) time.Duration { return ttl - o.ExpiryMargin }

// LeaseCallTimeout is how long a lease of ttl waits for a renewal,
// refresh, query or release: CallTimeout, but at most a quarter of the
// local life, so that a short lease learns of a lost renewal before its
// deadline.
func (o Limits) LeaseCallTimeout(ttl time.Duration) time.Duration {
	return max(min(o.CallTimeout, o.Life(ttl)/CallsPerLife), time.Millisecond)
}

// TTLMin is the shortest TTL a lease under o can keep: ExpiryMargin plus
// the larger of four call timeouts of at least min(CallTimeout,
// CallTimeoutFloor) (the local life holds a renewal and its whole
// timeout, RenewLatestMax) and twice ProofMargin (the status proof, which
// ends at the lease's expiry less the registry's skew bound, at most
// ExpiryMargin, stays usable for at least half the local life). With the
// defaults: 1s + max(4 × 250ms, 2 × 500ms) = 2s, the registry's default
// minimum.
func (o Limits) TTLMin() time.Duration {
	calls := CallsPerLife * min(o.CallTimeout, CallTimeoutFloor)
	return o.ExpiryMargin + max(calls, 2*o.ProofMargin)
}

// CheckTTL refuses a TTL shorter than TTLMin with a *SettingsError that
// names the shortest one o allows.
func (o Limits) CheckTTL(ttl time.Duration) error {
	if least := o.TTLMin(); ttl < least {
		return &SettingsError{Setting: "TTL", Value: ttl.String(), Want: "at least " + least.String(), TTL: true,
			Why: fmt.Sprintf("ExpiryMargin %s + max(%d × min(CallTimeout %s, %s), 2 × ProofMargin %s)",
				o.ExpiryMargin, CallsPerLife, o.CallTimeout, CallTimeoutFloor, o.ProofMargin)}
	}
	return nil
}

// Check refuses limits no lease can work with: a non-positive duration
// or count, a fraction outside (0, 1), or renewals so late in the local
// life (RenewFraction × (1 + RenewJitter) > RenewLatestMax) that a timely
// answer could land after the deadline. The error is a *SettingsError
// naming the setting and the range that works.
func (o Limits) Check() error {
	bad := func(setting, value, want, why string) error {
		return &SettingsError{Setting: setting, Value: value, Want: want, Why: why}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"CallTimeout", o.CallTimeout}, {"ExpiryMargin", o.ExpiryMargin}, {"ProofMargin", o.ProofMargin},
		{"ProofRefreshLead", o.ProofRefreshLead}, {"QueryInterval", o.QueryInterval},
		{"AcquireMargin", o.AcquireMargin}, {"DrainMargin", o.DrainMargin}} {
		if d.v <= 0 {
			return bad(d.name, d.v.String(), "above 0", "a time limit")
		}
	}
	switch {
	case o.AcquireLostMax < 1:
		return bad("AcquireLostMax", fmt.Sprint(o.AcquireLostMax), "at least 1", "calls in a row without an answer")
	case !(o.RenewJitter >= 0 && o.RenewJitter < 1):
		return bad("RenewJitter", fmt.Sprint(o.RenewJitter), "in [0, 1)", "a share of the renewal interval")
	case !(o.RenewFraction > 0 && o.RenewFraction*(1+o.RenewJitter) <= RenewLatestMax*(1+1e-12)): // rounding of a fraction computed as RenewLatestMax / (1 + jitter)
		return bad("RenewFraction", fmt.Sprint(o.RenewFraction), fmt.Sprintf("in (0, %.4g]", RenewLatestMax/(1+o.RenewJitter)),
			fmt.Sprintf("RenewFraction × (1 + RenewJitter %v) at most %v: the latest renewal and its timeout, a quarter of the local life, end by the deadline",
				o.RenewJitter, RenewLatestMax))
	case o.ProofRefreshLead <= o.ProofMargin:
		return bad("ProofRefreshLead", o.ProofRefreshLead.String(), "above ProofMargin "+o.ProofMargin.String(),
			"the proof is refreshed before it stops being usable")
	}
	return nil
}
