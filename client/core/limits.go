package core

import "time"

// Limits are the cores' named time limits: client.Options with its
// defaults filled gives them (client.Options documents each, with its
// default and why). The cores read nothing else: no clock, no rand.
type Limits struct {
	RenewFraction    float64       // renew when this fraction of the TTL has passed since the last confirmed renewal was sent
	RenewJitter      float64       // spread renewals by ± this fraction of the interval
	CallTimeout      time.Duration // a call without an answer after this long is lost
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
