package registry

import (
	"fmt"

	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Config holds the registry's named limits. A zero field takes the default
// documented beside it; Validate (called by New) fills defaults and rejects
// inconsistent values. All durations are milliseconds of the registry clock.
type Config struct {
	// IssuerEpoch is the epoch grants and status proofs are signed under;
	// the signing key must be allowed to sign it in the trust bundle.
	// Required, >= 1.
	IssuerEpoch uint64

	// TTLMsMin is the shortest lease a client may ask for. Optional,
	// defaults to 2000 (2s), the shortest the Go client keeps with its
	// default margins (client.TTLMin: a 1s expiry margin, then a local
	// life holding a renewal and its whole call timeout, and a status
	// proof usable for half of it). A 1s lease with the default skew
	// bound could never be used: its proofs end 500ms after issue, and a
	// gate subtracts its own 500ms bound (docs/guarantees.md, "The lease
	// clock"). Must exceed ClockSkewMaxMs.
	TTLMsMin uint64
	// TTLMsMax is the longest lease. Optional, defaults to 600000 (10 min):
	// a crashed owner blocks its resource at most this long.
	TTLMsMax uint64
	// TTLMsDefault is used when a request's TTLMs is 0. Optional, defaults
	// to 15000 (15s), clamped into [TTLMsMin, TTLMsMax].
	TTLMsDefault uint64

	// LockDelayMs is how long a resource stays ungrantable after a lease
	// *expires* (never after a release): the old owner, whose clock may run
	// slow within ClockSkewMaxMs, gets time to notice it lost the lease
	// before the next owner starts. Optional, defaults to 1000 (1s). Must
	// be >= ClockSkewMaxMs.
	LockDelayMs uint64
	// ClockSkewMaxMs bounds the disagreement between the registry clock and
	// any gate's or client's clock over one lease. A status proof's
	// validUntil never passes the lease's expiry minus this bound.
	// Optional, defaults to 500.
	ClockSkewMaxMs uint64
	// StatusProofTTLMs is the longest life of a status proof. Optional,
	// defaults to 2000 (2s): short enough that a revoked or released grant
	// stops verifying soon, long enough to spare a query per write.
	StatusProofTTLMs uint64
	// SeparateStatus makes a fresh grant the earlier form: a lockGrant.v1
	// without heldUntil, answered with a separate signed HELD
	// grantStatus.v1 (two signatures per acquire). Optional, defaults to
	// false: a fresh grant carries its own HELD statement (heldUntil, see
	// heldUntilMs) and is the acquire's one signed message. Set it during
	// a rollout while gates that predate the held statement remain (they
	// reject a held-form grant as BAD_PROOF: it does not parse for them).
	SeparateStatus bool
	// BatchGrantProofs signs the fresh grants that reach the signing step
	// together (a group commit's) under one Ed25519 signature over their
	// Merkle root, each grant's proof its inclusion path
	// ("batch:<keyId>:…", grant.BatchProof): one signature per group
	// instead of one per grant. Optional, defaults to false (every grant
	// signed alone, "sig:"): gates that predate batch proofs refuse them
	// (MALFORMED: longer than their 256-byte proof bound; BAD_PROOF: an
	// unknown prefix), so turn it on once every gate is upgraded, as the
	// held statement was rolled out (docs/operations.md). Needs an Ed25519
	// signing key. A renewal's or query's proofs stay single.
	BatchGrantProofs bool

	// WaitersPerResourceMax bounds the FIFO queue of waiting acquires on
	// one resource. Optional, defaults to 64.
	WaitersPerResourceMax int
	// WaitMsMax caps an acquire's WaitMs; it also bounds how long a
	// vanished waiter keeps its ticket. Optional, defaults to 30000 (30s).
	WaitMsMax uint64
	// HandoffClaimMs is how long the head waiter of a free resource has to
	// claim it before it is presumed gone and skipped. Optional, defaults
	// to 2000 (2s); Validate refuses a value outside [HandoffClaimMsMin,
	// HandoffClaimMsMax].
	HandoffClaimMs uint64
	// WaiterGraceMs is how long a waiting acquire's ticket keeps its place
	// in the queue after its wait ended (WAIT_TIMEOUT): long enough for
	// the same request ID to ask again and keep its place (Session.Lock
	// does, at once), so a waiter that queues for minutes in many long
	// polls stays where it joined. While in its grace the ticket is not
	// handed the lease by a release (nobody is listening); if it is the
	// head of a free resource it claims the lease itself when it asks
	// again, or is skipped as a vanished waiter after HandoffClaimMs.
	// Optional, defaults to 1000 (1s).
	WaiterGraceMs uint64
	// WaitPollMsMax bounds how long a waiter sleeps between linearizable
	// re-reads when no store event wakes it (a lease expiring, a vanished
	// head waiter). Optional, defaults to 1000 (1s).
	WaitPollMsMax uint64

	// RequestRetentionMs is how long a request ID is remembered after its
	// grant ended (expired, released or revoked); a retry within it gets
	// the same grant and its final state (EXPIRED for a lease older than
	// the record's lockstate.EndedLeasesMax ended ones), never a new grant. A
	// request whose grant is still HELD is never forgotten. Retention
	// counts from the end as the record places it: for a lease out of its
	// record's Ended, from the oldest end Ended remembers (endedAtMs), so
	// an entry may be kept longer, never shorter; the sweep deletes it
	// within a sweep interval of its lease's end (or first expiry, if
	// later) plus the retention, and an entry its busy resource's record
	// no longer names within twice the retention after its first expiry
	// (lockstate.EndedEntry). Optional, defaults to
	// RequestRetentionMsMin rounded up to a whole minute (16 min with the
	// default skew bound): the specification's 15 minutes to reconcile an
	// outcome that is not known (UnknownReconcileMs), plus ClockSkewMaxMs
	// (docs/guarantees.md, "How long a request ID is remembered"); the
	// rounding leaves room to raise the skew bound after DefaultConfig.
	// At least RequestRetentionMsMin, at most RequestRetentionMsMax.
	RequestRetentionMs uint64

	// CASRetriesMax bounds compare-and-swap retries of one call under
	// contention before it fails with ErrConflict. Optional, defaults to 32.
	CASRetriesMax int
	// CacheResourcesMax bounds how many resource records the shell keeps to
	// try a compare-and-swap without a read first; a stale entry costs one
	// failed compare, never a wrong answer. Optional, defaults to 4096.
	CacheResourcesMax int

	// ReleaseEarly answers a release once it is decided and its commit
	// handed to the store, before the commit returns: the caller waits for
	// no commit of its release. Optional, defaults to false (a release
	// answers after its commit, as etcd's Mutex.Unlock does). What it
	// costs (docs/guarantees.md, "A release answered early"): a commit
	// lost after the answer leaves the lease held until its TTL, as if
	// its owner had crashed, and until the commit lands another replica
	// (not this one) may still answer HELD for the released lease. It
	// moves no safety property: the released lease's successor is granted
	// only by a write compared against the release's outcome (in the same
	// transaction for a queued waiter), so its fence is above the
	// released one either way.
	ReleaseEarly bool

	// Observer hears of expiries and handoffs this registry commits (for
	// metrics). Optional, defaults to none. It is called after the commit,
	// outside any lock, and must not block.
	Observer Observer
}

// UnknownReconcileMs is the specification's budget for settling an
// outcome that is not known ("UNKNOWN reconciled within 15 minutes"), 15
// min: the longest a client or its reconciler may ask how an acquire of
// unknown outcome ended, from an instant no later than the lease's end
// (the acquire was sent before the grant).
const UnknownReconcileMs = 15 * 60 * 1000

// RequestRetentionMsMax bounds Config.RequestRetentionMs, 30 days:
// nothing in the protocol asks about a request ID that old, and the
// store holds every cycle of the retention (docs/operations.md,
// "Request retention").
const RequestRetentionMsMax = 30 * 24 * 3600 * 1000

// RequestRetentionMsMin is the shortest request retention c allows:
// UnknownReconcileMs plus c's ClockSkewMaxMs (the lease's end is judged
// by a registry clock, the budget by the asker's), filled from its
// default when 0.
func (c Config) RequestRetentionMsMin() uint64 {
	c.fill()
	return UnknownReconcileMs + c.ClockSkewMaxMs
}

// TTLMsMinDefault is Config.TTLMsMin's default: the Go client's shortest
// TTL with its default margins (client.TTLMin(client.Options{})), which
// a client test pins to this value.
const TTLMsMinDefault = 2000

// DefaultConfig returns the defaults for the given issuer epoch.
func DefaultConfig(issuerEpoch uint64) Config {
	c := Config{IssuerEpoch: issuerEpoch}
	c.fill()
	return c
}

func (c *Config) fill() {
	def := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.TTLMsMin, TTLMsMinDefault)
	def(&c.TTLMsMax, 600_000)
	def(&c.TTLMsDefault, 15_000)
	def(&c.LockDelayMs, 1000)
	def(&c.ClockSkewMaxMs, 500)
	def(&c.StatusProofTTLMs, 2000)
	def(&c.WaitMsMax, 30_000)
	def(&c.HandoffClaimMs, 2000)
	def(&c.WaitPollMsMax, 1000)
	def(&c.WaiterGraceMs, 1000)
	def(&c.RequestRetentionMs, (UnknownReconcileMs+c.ClockSkewMaxMs+59_999)/60_000*60_000)
	if c.WaitersPerResourceMax == 0 {
		c.WaitersPerResourceMax = 64
	}
	if c.CASRetriesMax == 0 {
		c.CASRetriesMax = 32
	}
	if c.CacheResourcesMax == 0 {
		c.CacheResourcesMax = 4096
	}
	c.TTLMsDefault = min(max(c.TTLMsDefault, c.TTLMsMin), c.TTLMsMax)
}

// limits is what the decisions (package lockstate) read of c.
func (c Config) limits() lockstate.Limits {
	return lockstate.Limits{
		IssuerEpoch: c.IssuerEpoch, SeparateStatus: c.SeparateStatus,
		TTLMsMin: c.TTLMsMin, TTLMsMax: c.TTLMsMax, TTLMsDefault: c.TTLMsDefault,
		LockDelayMs: c.LockDelayMs, ClockSkewMaxMs: c.ClockSkewMaxMs, StatusProofTTLMs: c.StatusProofTTLMs,
		WaitersPerResourceMax: c.WaitersPerResourceMax, WaitMsMax: c.WaitMsMax,
		HandoffClaimMs: c.HandoffClaimMs, WaiterGraceMs: c.WaiterGraceMs, RequestRetentionMs: c.RequestRetentionMs,
	}
}

// Validate fills defaults and checks the limits against each other.
// The range of Config.HandoffClaimMs, in ms. The head waiter has half
// the window, 250 ms at the least, to stamp its claim: about the slowest
// one-way path a registry's clients are expected on. The most is
// WaitMsMax's default (30 s), the longest a default wait lasts. The
// simulator's lock-set, semaphore and read/write lock rounds draw the
// window over this whole range, its ends weighted.
const (
	HandoffClaimMsMin = 500
	HandoffClaimMsMax = 30_000
)

func (c *Config) Validate() error {
	c.fill()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: config: "+format, append([]any{wire.ErrInvalid}, args...)...)
	}
	switch {
	case c.IssuerEpoch == 0:
		return bad("issuer epoch must be at least 1")
	case c.TTLMsMin > c.TTLMsMax:
		return bad("ttlMsMin %d above ttlMsMax %d", c.TTLMsMin, c.TTLMsMax)
	case c.TTLMsMax > 100*365*24*3600*1000:
		return bad("ttlMsMax %d above the grant format limit", c.TTLMsMax)
	case c.LockDelayMs < c.ClockSkewMaxMs:
		return bad("lockDelayMs %d below clockSkewMaxMs %d", c.LockDelayMs, c.ClockSkewMaxMs)
	case c.TTLMsMin <= c.ClockSkewMaxMs:
		return bad("ttlMsMin %d must exceed clockSkewMaxMs %d, or no status proof could ever be valid", c.TTLMsMin, c.ClockSkewMaxMs)
	case c.HandoffClaimMs < HandoffClaimMsMin || c.HandoffClaimMs > HandoffClaimMsMax:
		return bad("handoffClaimMs %d outside [%d, %d]: a live head waiter stamps its claim every half window, so below the least a slow network path could be skipped as vanished again and again; above the most a vanished head waiter keeps a free resource from everyone longer than a wait may last",
			c.HandoffClaimMs, HandoffClaimMsMin, HandoffClaimMsMax)
	case c.WaitersPerResourceMax < 0 || c.CASRetriesMax < 0 || c.CacheResourcesMax < 0:
		return bad("negative limit")
	case c.RequestRetentionMs < UnknownReconcileMs+c.ClockSkewMaxMs || c.RequestRetentionMs > RequestRetentionMsMax:
		return bad("requestRetentionMs %d outside [%d, %d]: a request ID must answer how its acquire ended for the specification's 15 minutes to reconcile an unknown outcome, plus clockSkewMaxMs %d",
			c.RequestRetentionMs, UnknownReconcileMs+c.ClockSkewMaxMs, RequestRetentionMsMax, c.ClockSkewMaxMs)
	}
	return nil
}
