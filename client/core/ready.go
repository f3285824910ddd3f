package core

import (
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// The cores talk to their shells in one shape, etcd-io/raft's: the shell
// feeds a core what happened (Step: an answer, a lost call, a release, an
// envelope to build or settle), asks it what to do now (Next: the tick;
// the call to make, when to look again, the state machine's steps), and
// performs that. A core never calls its shell and the shell never calls
// back into the core while it performs: it feeds the result in as the next
// input. View reads a core between steps.

// LeaseInput is one event a lease's shell feeds Lease.Step.
type LeaseInput interface{ leaseInput() }

// AcquireInput is one event an acquire's shell feeds Acquire.Step.
type AcquireInput interface{ acquireInput() }

// Answer is the registry's answer to Call: Issued, or Err. Err with a
// definite registry code (wire.CodeOf) is the registry's word; every other
// error means the call may or may not have been applied (lost). An answer
// to a call that is no longer in flight (already answered, or lost) is
// ignored.
type Answer struct {
	Call   Call
	Issued wire.Issued
	// Set is the answer to a lock set's call (Call.Set or
	// Call.SetRequest): every member's, in member order. A set's refresh
	// (a status query per member) answers here too, with Err the first
	// member's error, if any.
	Set []wire.Issued
	Err error
}

// Lost says Call got no answer within its Timeout: it may or may not have
// been applied. A call already answered is not lost again.
type Lost struct{ Call Call }

// Release begins giving the lease up: from the step on, ownership is not
// certain (envelopes are refused, no renewal is sent). With Drain the
// release call is due once LeaseView.DrainUntil has passed (a status proof
// outlives a release, so a copy of an unsettled write could otherwise be
// accepted after the registry let the lease go); without it at once. A
// lease already ended or releasing ignores it.
type Release struct{ Drain bool }

// BuildEnvelope asks for the gate.Mutation of segment Segment of the
// lease's operation, with the payload's digest (LeaseReady.Envelope, or
// LeaseReady.Err saying why not). The envelope counts as unsettled until
// Settle: a drained release waits for its proof to lapse.
type BuildEnvelope struct {
	// Member is the lock set's member (its index in member order) whose
	// grant the envelope carries, to that member's gate; 0 for a plain
	// lease. Each member counts its own segments.
	Member  int
	Segment uint64
	Payload grant.Digest
}

// Settle is the resource's answer to segment Segment. A final answer
// (gate.Outcome.Final: accepted, replayed, or a rejection no copy can ever
// escape) settles it, so a release need not wait for its proof; a
// non-final one (SEGMENT_GAP, RESOURCE_PAUSED, NOT_HELD) leaves it
// unsettled, because a copy still in the network could be accepted later.
// A write whose answer was lost must not be settled at all.
type Settle struct {
	Member  int // as BuildEnvelope's
	Segment uint64
	Outcome gate.Outcome
}

// Forget drops segment Segment's envelope from what a release waits for:
// it never left the process and cannot be sent again (a gate in the
// worker's own process rolled the write back because the worker's own
// business change failed).
type Forget struct {
	Member  int // as BuildEnvelope's
	Segment uint64
}

// Downgrading says the lease's holder began to downgrade it (Downgrade):
// from the step on the lease builds no envelope — the registry admits
// other readers once every HELD statement of the write lease has expired,
// on the promise that its holder stopped writing — whatever the
// downgrade's answer. Renewals go on (the shell sends none while its
// downgrade call is in flight), and a refused downgrade leaves a lease
// that still builds none: release it.
type Downgrading struct{}

// NewRequest gives an acquire whose request ID's grant already ended
// (AcquireReady.NeedsRequestID) the fresh request ID to go on with. The
// core asks for nothing before it has one; at any other time it is
// ignored.
type NewRequest struct{ RequestID string }

// Begin says an acquire call begins on the core, the first or a later one
// on an attempt whose earlier call gave up: it asks at once (the backoff
// of a call that gave up is forgotten; the request ID, and whether its
// last answer was lost, are kept). With LockChunk above zero it queues as
// Session.Lock does: each call waits at most LockChunk (and never past
// LockUntil, when that is not zero), and a WAIT_TIMEOUT is not an answer
// but a cue to ask again at once with the same request ID, which keeps the
// ticket's place in the registry's queue (within Config.WaiterGraceMs).
// Past LockUntil, WAIT_TIMEOUT ends the acquire as usual.
type Begin struct {
	LockChunk time.Duration
	LockUntil time.Time
}

func (Answer) leaseInput()        {}
func (Lost) leaseInput()          {}
func (Release) leaseInput()       {}
func (BuildEnvelope) leaseInput() {}
func (Settle) leaseInput()        {}
func (Forget) leaseInput()        {}
func (Downgrading) leaseInput()   {}
func (Answer) acquireInput()      {}
func (Lost) acquireInput()        {}
func (Begin) acquireInput()       {}
func (NewRequest) acquireInput()  {}

// LeaseReady is what a lease's core leaves its shell after a step.
type LeaseReady struct {
	// Call is the registry call to make now (Next only; Kind CallNone:
	// none). At most one is in flight: feed its Answer, or Lost once
	// Call.Timeout has passed without one, before the next.
	Call Call
	// Wake is when to call Next again if nothing happens first (Next
	// only; zero: only when something changes: an answer, a release, an
	// envelope refused at the deadline or for a stale proof). While a call
	// is in flight it is the local deadline while ownership is certain: a
	// shell that also looks then (a timer beside the call's) reports the
	// loss at the deadline itself.
	Wake time.Time
	// Transitions are the state machine's steps since the previous
	// LeaseReady, for the shell's hooks and books.
	Transitions []Transition
	// Envelope is BuildEnvelope's mutation (zero when refused).
	Envelope gate.Mutation
	// Err is why BuildEnvelope was refused: a *NotCertainError unless
	// ownership is certain and the local deadline is ahead (Next then
	// steps the deadline), ErrProofStale unless the status proof's
	// validUntil − ProofMargin is still ahead (a refresh is due).
	Err error
}

// AcquireReady is what an acquire's core leaves its shell after a step.
type AcquireReady struct {
	// Call is the registry call to make now (Next only; Kind CallNone:
	// none): Call.Request is what to send.
	Call Call
	// Wake is when to call Next again (Next only; zero: never, because
	// the acquire is done or a call is in flight).
	Wake time.Time
	// Transitions are the REQUESTED steps since the previous
	// AcquireReady; the last of a granted acquire is REQUESTED → HELD,
	// the lease's first.
	Transitions []Transition
	// Granted is the final answer when it is a grant: the hand-off to
	// NewLease. Every later AcquireReady carries it again.
	Granted *Granted
	// Err is the final answer when it is not a grant: a definite refusal,
	// or ErrBadAnswer. Every later AcquireReady carries it again.
	Err error
	// Unreachable is set once AcquireLostMax calls in a row went
	// unanswered: the shell stops (keeping the request ID pending: it may
	// still be granted, so a later call must reuse it). The core itself
	// would go on asking.
	Unreachable error
	// NeedsRequestID: the registry answered that the request ID's grant
	// already ended (the answer was lost long ago), a final answer for
	// that ID; the acquire goes on under a fresh one, which the shell
	// draws and steps in (NewRequest). Nothing is sent until it does.
	NeedsRequestID bool
}

// Done reports whether the acquire has its final answer: Granted or Err.
func (r AcquireReady) Done() bool { return r.Granted != nil || r.Err != nil }

// Granted hands a granted acquire over to its lease (NewLease).
type Granted struct {
	// Issued is the registry's answer: the grant, HELD (a lock set's: its
	// first member's).
	Issued wire.Issued
	// Set is a lock set's answer: every member's grant, HELD, in member
	// order (nil for a plain acquire). NewLease then makes one lease of
	// them all: one machine, one schedule, one renewal of every member.
	Set []wire.Issued
	// OperationID is the operation the grant's root binds.
	OperationID string
	// From is the client-clock instant from which the lease's TTL counts:
	// its local deadline is From + TTL − ExpiryMargin. The rule: from the
	// send of the call whose answer carried the grant, plus how long
	// after that call reached the registry the lease expires
	// (Issued.ExpiresAfterMs), less the TTL. The call reached the registry
	// after it was sent, so the deadline is never after the registry's own
	// expiry, whatever happened before the call: a lost answer, a wait in
	// the queue (which is inside ExpiresAfterMs, so a grant after a wait
	// of any length is usable for its whole TTL), or a grant issued to
	// this request ID by an earlier process of the worker that the
	// registry answers again after a restart. It is never later than the
	// step that handed it over. An answer without ExpiresAfterMs (an
	// older registry) keeps the rule before it: the first send of the
	// request ID (AcquireView.FirstSent), which is early enough unless the
	// grant predates this process.
	From time.Time
}

// LeaseView is a lease core as its shell reads it between steps.
type LeaseView struct {
	// State is the machine's state. StateAt is what a reader sees.
	State LeaseState
	// Releasing: a Release began.
	Releasing bool
	// Issued is the grant, its proof and the latest HELD status and its
	// proof (a lock set's: its first member's).
	Issued wire.Issued
	// Set is a lock set's members' (as Issued), in member order; nil for
	// a plain lease.
	Set []wire.Issued
	// OperationID is the operation the grant's root binds.
	OperationID string
	// Schedule is the lease's timing.
	Schedule Schedule
	// ReleaseAt is when the release will be sent (zero unless
	// Releasing).
	ReleaseAt time.Time
	// Unsettled is how many envelopes await a final answer.
	Unsettled int
	// DrainUntil is the instant (client clock) after which no unsettled
	// envelope's status proof can still be accepted by a gate: the latest
	// validUntil attached to one, plus DrainMargin for the skew between
	// the registry's clock and the client's and the gate's. Zero when
	// every envelope is settled.
	DrainUntil time.Time
}

// Certain reports whether the client may produce new effects by the
// machine alone: HELD or RENEWING, and no release begun.
func (v LeaseView) Certain() bool { return v.State.Certain() && !v.Releasing }

// StateAt is the state a reader sees at now: the machine's, except that
// HELD or RENEWING at or past the local deadline reads OWNERSHIP_UNKNOWN,
// the step the machine takes at its next Next or Step. A shell's State
// reads it, so that no reader ever sees HELD after the deadline, however
// late a timer fires.
func (v LeaseView) StateAt(now time.Time) LeaseState {
	if v.State.Certain() && !now.Before(v.Schedule.Deadline) {
		return StateUnknown
	}
	return v.State
}

// CertainAt reports whether the client may produce new effects at now:
// StateAt(now) is HELD or RENEWING and no release begun. A shell's
// ownership context lives exactly while this is true.
func (v LeaseView) CertainAt(now time.Time) bool { return v.StateAt(now).Certain() && !v.Releasing }

// AcquireView is an acquire core as its shell reads it between steps.
type AcquireView struct {
	// Request is the request as it will be sent (the current request ID).
	Request wire.AcquireRequest
	// FirstSent is when the current request ID was first sent (zero:
	// never): the registry may have granted at any instant since.
	FirstSent time.Time
	// ReusableAt is when an attempt whose answer never came is presumed
	// over (client clock): TTL + WaitMs + AcquireMargin after its last
	// send. Until then no other request ID may be used for the resource.
	ReusableAt time.Time
}
