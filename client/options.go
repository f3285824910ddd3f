package client

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/fencegate/fencegate/client/core"
)

// Named defaults of Options. Each is documented where the field is.
const (
	RenewFractionDefault    = 1.0 / 3
	RenewJitterDefault      = 0.1
	CallTimeoutDefault      = 2 * time.Second
	ExpiryMarginDefault     = 1 * time.Second
	ProofMarginDefault      = 500 * time.Millisecond
	ProofRefreshLeadDefault = 1 * time.Second
	QueryIntervalDefault    = 500 * time.Millisecond
	AcquireMarginDefault    = 2 * time.Second
	TTLDefault              = 15 * time.Second
	DrainMarginDefault      = 1 * time.Second
	AcquireLostMaxDefault   = 8
	LockWaitChunkDefault    = 25 * time.Second
)

// Options are the client's named time limits and injected dependencies.
// The zero value is usable: every zero field takes its default.
//
// A lease can be lost at any moment, whatever these say: a pause, a
// partition or a registry failover ends it without telling the client.
// The limits only decide how soon the client stops on its own; the gate's
// fence check is what makes a stale write harmless.
type Options struct {
	// Clock is the client's only time source. Optional, defaults to
	// SystemClock. The simulator injects simulated time.
	Clock Clock
	// Rand draws renewal jitter and request IDs. Optional, defaults to a
	// generator seeded from crypto/rand (request IDs of two processes of
	// one owner must not collide). The simulator passes a seeded one.
	Rand *mrand.Rand
	// RenewFraction: renew when this fraction of the lease's local life
	// (TTL − ExpiryMargin) has passed since the last confirmed renewal was
	// sent. Optional, defaults to 1/3 (as etcd's KeepAlive, of the TTL):
	// after a lost renewal a query still fits before the deadline.
	// RenewFraction × (1 + RenewJitter) must be at most 3/4
	// (core.RenewLatestMax): the latest renewal and its timeout, a quarter
	// of the local life, then end by the deadline.
	RenewFraction float64
	// RenewJitter spreads renewals by ± this fraction of the interval so
	// that many leases do not renew in step. Optional, defaults to 0.1;
	// must be below 1.
	RenewJitter float64
	// CallTimeout: a registry call without an answer after this long is
	// lost; an answer that comes later is late, and treated as lost.
	// Optional, defaults to 2s; an acquire adds its WaitMs; a lease's calls
	// use at most a quarter of its local life (TTL − ExpiryMargin).
	CallTimeout time.Duration
	// ExpiryMargin: the local deadline is (send time of the last confirmed
	// renewal) + TTL − ExpiryMargin by the client's clock. It covers the
	// registry's skew bound (ClockSkewMaxMs: another replica may judge the
	// expiry by its own clock) and clock rate error over one TTL.
	// Optional, defaults to 1s (twice the registry's default
	// ClockSkewMaxMs). It is also the first term of the shortest TTL a
	// lease can keep (TTLMin).
	ExpiryMargin time.Duration
	// ProofMargin: an envelope is built only while the status proof's
	// validUntil − ProofMargin is after the client's now, leaving the gate
	// time to receive it. Optional, defaults to 500ms. A status proof ends
	// at the lease's expiry less the registry's skew bound at the latest,
	// so with ExpiryMargin ≥ ClockSkewMaxMs + ProofMargin (the defaults:
	// 1s = 500ms + 500ms) it stays usable up to the local deadline.
	ProofMargin time.Duration
	// ProofRefreshLead: refresh the status proof when its validUntil −
	// ProofRefreshLead is reached, unless it stays usable up to the local
	// deadline anyway (then only the next renewal brings a newer one).
	// Optional, defaults to 1s; raised to ProofMargin + 100ms if not above
	// ProofMargin.
	ProofRefreshLead time.Duration
	// QueryInterval: while OWNERSHIP_UNKNOWN, ask the registry again after
	// this long. Optional, defaults to 500ms.
	QueryInterval time.Duration
	// TTLDefault is the lease TTL asked for when an AcquireRequest names
	// none. Optional, defaults to 15s (the registry's own default). The
	// client sends it explicitly rather than leaving the choice to the
	// registry: after a lost answer it must know how long the attempt it
	// cannot see may hold the lease.
	TTLDefault time.Duration
	// AcquireMargin: an acquire whose answer never came is presumed over
	// once TTL + WaitMs + AcquireMargin passed since it was last sent; only
	// then may a new request ID be used for the resource. Optional,
	// defaults to 2s (must cover network delay of the lost request).
	AcquireMargin time.Duration
	// AcquireLostMax: an Acquire whose calls went unanswered this many
	// times in a row (the registry unreachable, or its answers lost) stops
	// with an error wrapping ErrUnreachable and the last call's error; its
	// request ID stays pending, so a later Acquire with the same
	// parameters continues it. Optional, defaults to 8 (with the backoff,
	// about ten seconds of an unreachable registry).
	AcquireLostMax int
	// LockWaitChunk bounds how long one call of Session.Lock queues at the
	// registry before it asks again (the registry caps a wait at its
	// WaitMsMax, 30 s by default). Optional, defaults to 25 s.
	LockWaitChunk time.Duration
	// DrainMargin is added to the latest status-proof validUntil of the
	// envelopes still unsettled when Release begins; the release is sent
	// only after that (Lease.DrainUntil). It covers the registry↔
	// client and registry↔gate skew. Optional, defaults to 1s (twice the
	// registry's default ClockSkewMaxMs, as ExpiryMargin).
	DrainMargin time.Duration
	// Manual: no background goroutine; the caller drives the lease with
	// Tick. The simulator and deterministic tests use it. Optional,
	// defaults to false.
	Manual bool
	// OnTransition, if set, is called (without locks held) after every
	// state transition, with the lease's ID, or, for an acquire's
	// REQUESTED → REQUESTED steps, its request ID. Optional.
	OnTransition func(lease string, from, to LeaseState, ev LeaseEvent)
}

// WithDefaults returns o with every zero field set to its default (what
// NewSession uses).
func (o Options) WithDefaults() Options {
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Rand == nil {
		var seed [16]byte
		_, _ = rand.Read(seed[:])
		o.Rand = mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.RenewFraction == 0 {
		o.RenewFraction = RenewFractionDefault
	}
	if o.RenewJitter == 0 {
		o.RenewJitter = RenewJitterDefault
	}
	def(&o.CallTimeout, CallTimeoutDefault)
	def(&o.ExpiryMargin, ExpiryMarginDefault)
	def(&o.ProofMargin, ProofMarginDefault)
	def(&o.ProofRefreshLead, ProofRefreshLeadDefault)
	if o.ProofRefreshLead <= o.ProofMargin && o.ProofMargin > 0 {
		o.ProofRefreshLead = o.ProofMargin + 100*time.Millisecond
	}
	def(&o.QueryInterval, QueryIntervalDefault)
	def(&o.AcquireMargin, AcquireMarginDefault)
	def(&o.TTLDefault, TTLDefault)
	def(&o.DrainMargin, DrainMarginDefault)
	def(&o.LockWaitChunk, LockWaitChunkDefault)
	if o.AcquireLostMax == 0 {
		o.AcquireLostMax = AcquireLostMaxDefault
	}
	return o
}

// Validate refuses options no lease can work with (a negative time
// limit, a fraction out of range, renewals so late that a timely answer
// could land after the deadline: core.Limits.Check), with a
// *SettingsError naming the setting and the range that works. Zero fields
// take their defaults first. Session.Acquire calls it before it sends
// anything.
func (o Options) Validate() error {
	o = o.WithDefaults()
	if o.TTLDefault <= 0 || o.LockWaitChunk <= 0 {
		return &SettingsError{Setting: "TTLDefault/LockWaitChunk", Value: fmt.Sprint(o.TTLDefault, "/", o.LockWaitChunk),
			Want: "above 0", Why: "a time limit"}
	}
	return o.Limits().Check()
}

// TTLMin is the shortest lease TTL o's margins allow
// (core.Limits.TTLMin): ExpiryMargin + max(4 × min(CallTimeout, 250ms),
// 2 × ProofMargin), 2s with the defaults, the registry's default minimum
// too. Session.Acquire refuses a shorter TTL before it sends anything.
func TTLMin(o Options) time.Duration { return o.Limits().TTLMin() }

// Limits returns the time limits the cores read (o's defaults filled).
func (o Options) Limits() core.Limits {
	o = o.WithDefaults()
	return core.Limits{
		RenewFraction: o.RenewFraction, RenewJitter: o.RenewJitter, CallTimeout: o.CallTimeout,
		ExpiryMargin: o.ExpiryMargin, ProofMargin: o.ProofMargin, ProofRefreshLead: o.ProofRefreshLead,
		QueryInterval: o.QueryInterval, AcquireMargin: o.AcquireMargin, AcquireLostMax: o.AcquireLostMax,
		DrainMargin: o.DrainMargin,
	}
}
