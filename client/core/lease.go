package core

import (
	"slices"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Lease is one lease's pure core (a lock set's too: one Lease for every
// member, set.go), as etcd-io/raft's RawNode is a node's: the state machine (Machine), the timing (Schedule), which
// registry call to make next and how to read its answer, whether an
// envelope may be built, and what a release must wait for. It does no
// I/O, reads no clock, starts no goroutine and takes no lock: every step
// takes the client's now, and the shell makes the calls it asks for.
// client.Lease drives it with real time and a Transport; the simulator
// drives it with simulated time and a simulated network. Not safe for
// concurrent use: the shell serializes.
//
// The driving loop: call Next(now); when its Call is not CallNone, make
// it (at most one is ever in flight), then Step the Answer, or Lost once
// Call.Timeout has passed without one; otherwise call Next again at its
// Wake (or when something changes: an envelope was refused at the
// deadline, a Release was stepped). While a call is in flight Wake names
// the local deadline: a shell that also looks then (a timer beside the
// call's) reports the loss at the deadline itself. Readers between steps
// use View, whose StateAt and CertainAt see the deadline at once.
type Lease struct {
	o      Limits
	m      Machine
	issued wire.Issued // grant, grant proof, latest HELD status and proof (a set's: its first member's, set[0])
	// set is a lock set's members, in member order, each its grant, proof
	// and latest HELD status (nil for a plain lease): one machine, one
	// schedule and one call at a time for all of them (set.go).
	set       []wire.Issued
	operation string
	sched     Schedule
	jitter    func() float64 // in [-1, 1), from a seeded rand
	inflight  Call
	callN     uint64
	releasing bool
	// downgraded: the holder began to downgrade the lease (Downgrading):
	// it builds no envelope from then on.
	downgraded bool
	releaseAt  time.Time // releasing: send the release at or after this instant
	// unsettled maps each segment (of a member: a set's members each
	// count their own segments) whose envelope was built and not yet
	// settled to the latest status-proof validUntil attached to it.
	unsettled map[segment]time.Time
	trans     []Transition
}

// CallKind is a registry call the core asks for.
type CallKind int

// The calls. CallNone means "nothing now".
const (
	CallNone         CallKind = iota
	CallRenew                 // Transport.Renew: renew the lease (also a fresh proof)
	CallRefresh               // Transport.Status: only the status proof needs refreshing
	CallQuery                 // Transport.Renew while OWNERSHIP_UNKNOWN: its answer settles the state
	CallRelease               // Transport.Release
	CallAcquire               // Transport.Acquire (Acquire)
	CallQueryRequest          // Transport.QueryRequest: the grant of a request whose answer was lost (Acquire)
	CallDowngrade             // Downgrader.Downgrade: the write lease becomes a reader's (Downgrade)
)

var callNames = [...]string{"none", "renew", "refresh", "query", "release", "acquire", "query-request", "downgrade"}

func (k CallKind) String() string { return callNames[k] }

// Call is one registry call a core asked for: what, about what, when
// (client clock) and how long its answer may take before it counts as
// lost (an answer after Timeout is late and treated as lost). It carries
// everything the call sends: the shell performs it without asking the
// core again.
type Call struct {
	Kind    CallKind
	Sent    time.Time
	Timeout time.Duration
	// Grant is the lease's grant (CallRenew, CallRefresh, CallQuery,
	// CallRelease): renew and release name its resource and lease, a
	// refresh sends it whole.
	Grant *grant.Grant
	// Request is the acquire to send (CallAcquire), or whose grant to ask
	// for by its RequestID (CallQueryRequest).
	Request wire.AcquireRequest
	// Set is a lock set lease's member grants, in member order: the call
	// is about every member at once (CallRenew and CallQuery: one set
	// renewal; CallRelease: one set release; CallRefresh: a status query
	// per member, answered together). Nil for a plain lease.
	Set []*grant.Grant
	// SetRequest is the lock set to acquire (CallAcquire of a set's
	// acquire core; nil otherwise). Its RequestID and WaitMs are
	// Request's.
	SetRequest *wire.LockSetRequest
	// Downgrade is the downgrade to send (CallDowngrade; nil otherwise):
	// its RequestID is the same on every send.
	Downgrade *wire.DowngradeRequest
	n         uint64 // matches the answer to the call
}

// Transition is one step of the lease's machine, for the shell's hooks.
type Transition struct {
	From, To LeaseState
	Event    Event
}

// NewLease returns the core of the lease g hands over (the acquire core's
// AcquireReady.Granted), HELD: its TTL counts from g.From. o must have its
// defaults filled (client.Options.Limits); jitter draws from the shell's
// seeded rand in [-1, 1) (nil: none).
func NewLease(o Limits, g Granted, jitter func() float64) *Lease {
	if jitter == nil {
		jitter = func() float64 { return 0 }
	}
	c := &Lease{o: o, m: Machine{state: StateHeld}, issued: g.Issued, operation: g.OperationID, jitter: jitter, unsettled: map[segment]time.Time{}}
	if len(g.Set) > 0 {
		c.set = slices.Clone(g.Set)
		c.issued = c.set[0]
	}
	c.sched = Confirmed(o, g.From, c.ttl(), c.evidenceUntil(), c.jitter())
	return c
}

// View returns the lease as its shell reads it between steps.
func (c *Lease) View() LeaseView {
	return LeaseView{
		State: c.m.state, Releasing: c.releasing, Issued: c.issued, Set: slices.Clone(c.set), OperationID: c.operation,
		Schedule: c.sched, ReleaseAt: c.releaseAt, Unsettled: len(c.unsettled), DrainUntil: c.drainUntil(),
	}
}

// ready hands out what the steps since the last one left the shell.
func (c *Lease) ready(r LeaseReady) LeaseReady {
	r.Transitions, c.trans = c.trans, nil
	return r
}

// Step feeds the lease one input at now and returns what follows (no
// call: Next says which call is due).
func (c *Lease) Step(now time.Time, in LeaseInput) LeaseReady {
	var r LeaseReady
	switch in := in.(type) {
	case Answer:
		c.answer(now, in.Call, reply{in.Issued, in.Set}, in.Err)
	case Lost:
		c.answer(now, in.Call, reply{}, ErrOutcomeUnknown)
	case Release:
		c.beginRelease(now, in.Drain)
	case BuildEnvelope:
		r.Envelope, r.Err = c.envelope(now, in.Member, in.Segment, in.Payload)
	case Settle:
		if in.Outcome.Final() {
			delete(c.unsettled, segment{in.Member, in.Segment})
		}
	case Forget:
		delete(c.unsettled, segment{in.Member, in.Segment})
	case Downgrading:
		c.downgraded = true
	}
	return c.ready(r)
}

func (c *Lease) ttl() time.Duration {
	return time.Duration(c.issued.Grant.TTLMs) * time.Millisecond
}

// callTimeout is how long the lease's calls wait (Limits.LeaseCallTimeout).
func (c *Lease) callTimeout() time.Duration { return c.o.LeaseCallTimeout(c.ttl()) }

func (c *Lease) step(ev Event, now time.Time) {
	from := c.m.state
	to, fx := c.m.Step(ev)
	if fx.Query {
		c.sched.QueryAt = now
	}
	c.trans = append(c.trans, Transition{From: from, To: to, Event: ev})
}

func (c *Lease) send(k CallKind, now time.Time) Call {
	c.callN++
	c.inflight = Call{Kind: k, Sent: now, Timeout: c.callTimeout(), Grant: c.issued.Grant, Set: c.setGrants(), n: c.callN}
	return c.inflight
}

// Next is the lease's tick: it returns the call to make at now,
// recording it as in flight (with the local deadline as Wake while
// ownership is certain), or none and the instant to look again (zero:
// only when something changes), with the transitions since the last
// LeaseReady. It first notices the local deadline: HELD or RENEWING
// at or past it becomes OWNERSHIP_UNKNOWN, whether or not a call is in
// flight. While a call is in flight it makes no other call (answer it
// first) and names the deadline as the instant to look again while
// ownership is certain: a shell that waits on that instant as well as on
// the call reports the loss at the deadline itself.
func (c *Lease) Next(now time.Time) LeaseReady {
	call, wake := c.next(now)
	if call.Kind != CallNone && c.m.state.Certain() && !c.releasing {
		wake = c.sched.Deadline // the guard beside the call
	}
	return c.ready(LeaseReady{Call: call, Wake: wake})
}

func (c *Lease) next(now time.Time) (Call, time.Time) {
	if c.m.state.Terminal() {
		return Call{}, time.Time{}
	}
	c.observe(now)
	switch {
	case c.inflight.Kind != CallNone:
		return Call{}, c.deadlineWake()
	case c.releasing && now.Before(c.releaseAt):
		if dl := c.deadlineWake(); !dl.IsZero() && dl.Before(c.releaseAt) {
			return Call{}, dl
		}
		return Call{}, c.releaseAt
	case c.releasing:
		return c.send(CallRelease, now), time.Time{}
	}
	due, wake := c.sched.Check(c.o, c.m.state, now)
	switch due {
	case DueRenew:
		c.step(EvRenewDue, now)
		return c.send(CallRenew, now), time.Time{}
	case DueRefresh:
		c.step(EvRenewDue, now)
		return c.send(CallRefresh, now), time.Time{}
	case DueQuery:
		return c.send(CallQuery, now), time.Time{}
	}
	return Call{}, wake
}

// observe steps the local deadline if it passed at now while ownership
// was certain (OWNERSHIP_UNKNOWN, and a query is due at once).
func (c *Lease) observe(now time.Time) {
	if !c.m.state.Certain() {
		return
	}
	if due, _ := c.sched.Check(c.o, c.m.state, now); due == DueDeadline {
		c.step(EvDeadline, now)
	}
}

// deadlineWake is the local deadline while ownership is certain (zero
// otherwise): the instant a driver must look again even with a call in
// flight.
func (c *Lease) deadlineWake() time.Time {
	if c.m.state.Certain() {
		return c.sched.Deadline
	}
	return time.Time{}
}

// answer reads the answer to call, received at now. An answer to a call
// that is no longer in flight (already answered, or lost) is ignored.
func (c *Lease) answer(now time.Time, call Call, is reply, err error) {
	if call.n == 0 || call.n != c.inflight.n {
		return
	}
	c.inflight = Call{}
	c.observe(now)
	late := now.Sub(call.Sent) > call.Timeout
	switch call.Kind {
	case CallRenew, CallRefresh:
		c.renewAnswer(now, call, is, err, late)
	case CallQuery:
		c.queryAnswer(now, call, is, err, late)
	case CallRelease:
		c.releaseAnswer(now, err)
	}
}

func (c *Lease) renewAnswer(now time.Time, call Call, is reply, err error, late bool) {
	if c.m.state == StateUnknown {
		c.deadlineAnswer(now, call, is, err, late)
		return
	}
	if c.m.state != StateRenewing {
		return
	}
	switch held, refused := c.judge(is, err); {
	case held && !late:
		c.confirm(is, call.Sent, call.Kind == CallRefresh)
		c.step(EvRenewOK, now)
	case refused:
		c.step(EvRenewRefused, now)
	case held && late:
		c.step(EvRenewLate, now)
	default:
		c.step(EvRenewLost, now)
	}
}

// deadlineAnswer reads the answer to a renewal or refresh during which
// the local deadline passed (the lease went OWNERSHIP_UNKNOWN with the
// call in flight). A renewal is the very call a query is: a timely HELD
// answer confirms the grant with a new deadline. A refresh does not renew:
// only its definite refusal counts. Otherwise the query the deadline
// asked for is still due at once.
func (c *Lease) deadlineAnswer(now time.Time, call Call, is reply, err error, late bool) {
	held, refused := c.judge(is, err)
	switch {
	case refused:
		c.step(EvQueryExpired, now)
	case held && !late && call.Kind == CallRenew:
		c.confirm(is, call.Sent, false)
		c.step(EvQueryHeld, now)
	case call.Kind == CallRenew:
		c.step(EvQueryUnavailable, now)
	}
}

// queryAnswer reads a query while OWNERSHIP_UNKNOWN. It is a renewal: a
// HELD answer about the same grant both confirms ownership and gives a
// new deadline; a definite refusal confirms the grant is over.
func (c *Lease) queryAnswer(now time.Time, call Call, is reply, err error, late bool) {
	if c.m.state != StateUnknown {
		return
	}
	switch held, refused := c.judge(is, err); {
	case held && !late:
		c.confirm(is, call.Sent, false)
		c.step(EvQueryHeld, now)
	case refused:
		c.step(EvQueryExpired, now)
	default:
		c.step(EvQueryUnavailable, now)
		c.sched.QueryAt = now.Add(c.o.QueryInterval)
	}
}

func (c *Lease) releaseAnswer(now time.Time, err error) {
	switch classify(err) {
	case answerOK: // even late: a release cannot be undone
		c.step(EvReleaseOK, now)
	case answerRefused:
		c.step(EvReleaseRefused, now)
	default:
		c.step(EvReleaseLost, now)
		c.releaseAt = now.Add(c.o.QueryInterval)
	}
}

// judge reads a renewal or status answer: held means the registry said
// this very grant (every member of a set) is HELD; refused means it said
// definitely that it is not (for a set: that any member is not — losing
// one member ends the whole set). An answer about another grant says
// nothing about this one.
func (c *Lease) judge(is reply, err error) (held, refused bool) {
	switch classify(err) {
	case answerRefused:
		return false, true
	case answerOK:
	default:
		return false, false
	}
	if c.set != nil {
		return c.judgeSet(is.set)
	}
	return judgeOne(c.issued.Grant, is.one)
}

// judgeOne reads one grant's answer is about g, as judge does.
func judgeOne(g *grant.Grant, is wire.Issued) (held, refused bool) {
	if is.Status == nil || is.Status.Grant != g.Digest() {
		return false, false
	}
	if is.Status.State != grant.StateHeld {
		return false, true
	}
	return true, false
}

// confirm records a HELD answer: a fresh status proof (and the gate
// proofs that came with it: their status MACs cover this status only)
// and, for a renewal, a new deadline measured from when the renewal was
// sent. A set's answer carries every member's.
func (c *Lease) confirm(is reply, sent time.Time, statusOnly bool) {
	if c.set != nil {
		for i := range c.set {
			c.set[i].Status, c.set[i].StatusProof = is.set[i].Status, is.set[i].StatusProof
			c.set[i].GateProofs = is.set[i].GateProofs
		}
		c.issued = c.set[0]
	} else {
		c.issued.Status, c.issued.StatusProof = is.one.Status, is.one.StatusProof
		c.issued.GateProofs = is.one.GateProofs
	}
	if statusOnly {
		c.sched = c.sched.Refreshed(c.o, c.evidenceUntil())
		return
	}
	c.sched = Confirmed(c.o, sent, c.ttl(), c.evidenceUntil(), c.jitter())
}
