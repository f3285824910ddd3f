package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Acquire is one acquire's pure core: it keeps the request ID until a
// final answer, asks for the grant by that ID after a lost answer (and
// sends the same acquire again only once the registry says it has none),
// backs off, and reads every answer. Like Lease it does no I/O and
// reads no clock; Session.Acquire drives it with a Transport, the
// simulator with a simulated network. Not safe for concurrent use.
type Acquire struct {
	o         Limits
	req       wire.AcquireRequest
	m         Machine
	newID     func() string
	jitter    func() float64 // in [0, 1)
	firstSent time.Time      // client clock, first send of this request ID
	lastSent  time.Time      // client clock, last send of it
	doneSent  time.Time      // client clock, send of the call whose answer ended the acquire
	lost      bool           // the last acquire's answer was lost: ask by request ID next
	backoff   time.Duration
	retryAt   time.Time
	inflight  Call
	callN     uint64
	lostRun   int // calls in a row without an answer
	// locking: a WAIT_TIMEOUT is not final, the same request asks again
	// at once and keeps its place in the queue (Session.Lock), until
	// lockUntil (zero: no end but the caller's); each wait is at most
	// lockChunk and never runs past lockUntil.
	locking   bool
	lockUntil time.Time
	lockChunk time.Duration
	done      bool
	issued    wire.Issued
	err       error
	trans     []Transition
	// unreachable is set once AcquireLostMax calls in a row went
	// unanswered: the driver stops (keeping the request ID pending). The
	// core itself would go on asking.
	unreachable error
}

// Unreachable returns the error to stop with when AcquireLostMax calls
// in a row went unanswered (nil otherwise). The acquire is not done: its
// request ID may still be granted, so a later call must reuse it.
func (a *Acquire) Unreachable() error { return a.unreachable }

// NewAcquire returns the core of an acquire of req (its RequestID
// set). newRequestID draws a fresh ID for when the registry answers that
// this one's grant already ended; jitter draws in [0, 1) for the backoff.
// o must have its defaults filled.
func NewAcquire(o Limits, req wire.AcquireRequest, newRequestID func() string, jitter func() float64) *Acquire {
	return &Acquire{o: o, req: req, m: NewMachine(), newID: newRequestID, jitter: jitter, backoff: AcquireBackoffMin}
}

// WaitAsLock makes the acquire queue as Session.Lock does: each call waits
// at most chunk (and never past until, when until is not zero), and a
// WAIT_TIMEOUT is not an answer but a cue to ask again at once with the
// same request ID, which keeps the ticket's place in the registry's queue
// (within Config.WaiterGraceMs). Past until, WAIT_TIMEOUT ends the
// acquire as usual.
func (a *Acquire) WaitAsLock(chunk time.Duration, until time.Time) {
	a.locking, a.lockChunk, a.lockUntil = true, chunk, until
}

// Request returns the request as it will be sent (the current request ID).
func (a *Acquire) Request() wire.AcquireRequest { return a.req }

// FirstSent is when the current request ID was first sent (zero: never):
// the registry may have granted at any instant since, so a lease's first
// deadline counts from it.
func (a *Acquire) FirstSent() time.Time { return a.firstSent }

// LeaseFrom is the client-clock instant from which the granted lease's
// TTL counts: its local deadline is LeaseFrom + TTL − ExpiryMargin (zero
// until the acquire is done with a grant). The rule: count from the send
// of the call whose answer carried the grant, plus how long after that
// call reached the registry the lease expires (Issued.ExpiresAfterMs),
// less the TTL. The call reached the registry after it was sent, so the
// deadline is never after the registry's own expiry, whatever happened
// before the call: a lost answer, a wait in the queue (which is inside
// ExpiresAfterMs, so a grant after a wait of any length is usable for its
// whole TTL), or a grant issued to this request ID by an earlier process
// of the worker that the registry answers again after a restart. It is
// never later than now. An answer without ExpiresAfterMs (an older
// registry) keeps the rule before it: the first send of the request ID,
// which is early enough unless the grant predates this process.
func (a *Acquire) LeaseFrom(now time.Time) time.Time {
	if !a.done || a.issued.Grant == nil {
		return time.Time{}
	}
	from := a.firstSent
	if ms := a.issued.ExpiresAfterMs; ms > 0 {
		ttl := time.Duration(a.issued.Grant.TTLMs) * time.Millisecond
		from = a.doneSent.Add(time.Duration(ms)*time.Millisecond - ttl)
	}
	if from.After(now) {
		return now
	}
	return from
}

// ReusableAt is when an attempt whose answer never came is presumed over
// (client clock): TTL + WaitMs + AcquireMargin after its last send. Until
// then no other request ID may be used for the resource.
func (a *Acquire) ReusableAt() time.Time {
	return a.lastSent.Add(time.Duration(a.req.TTLMs+a.req.WaitMs)*time.Millisecond + a.o.AcquireMargin)
}

// Done reports whether the acquire has a final answer: the grant, HELD,
// or the error that ends it (a definite refusal, or ErrBadAnswer).
func (a *Acquire) Done() (done bool, is wire.Issued, err error) {
	return a.done, a.issued, a.err
}

// Transitions returns and forgets the REQUESTED transitions since the
// last call.
func (a *Acquire) Transitions() []Transition {
	t := a.trans
	a.trans = nil
	return t
}

// Restart lets a new Acquire call on a pending attempt ask at once: the
// backoff of the call that gave up is forgotten, the request ID and
// whether its last answer was lost are kept.
func (a *Acquire) Restart() {
	a.backoff, a.retryAt, a.lostRun, a.unreachable = AcquireBackoffMin, time.Time{}, 0, nil
}

// Next returns the call to make at now, or CallNone and the instant to
// look again (zero: never, because the acquire is done or a call is in
// flight).
func (a *Acquire) Next(now time.Time) (Call, time.Time) {
	switch {
	case a.done || a.inflight.Kind != CallNone:
		return Call{}, time.Time{}
	case now.Before(a.retryAt):
		return Call{}, a.retryAt
	}
	a.callN++
	if a.lost {
		a.inflight = Call{Kind: CallQueryRequest, Sent: now, Timeout: a.o.CallTimeout, n: a.callN}
		return a.inflight, time.Time{}
	}
	if a.firstSent.IsZero() {
		a.firstSent = now
	}
	a.lastSent = now
	if a.locking {
		wait := a.lockChunk
		if !a.lockUntil.IsZero() {
			wait = min(wait, max(a.lockUntil.Sub(now), time.Millisecond))
		}
		a.req.WaitMs = uint64(max(wait/time.Millisecond, 1))
	}
	wait := time.Duration(a.req.WaitMs) * time.Millisecond
	a.inflight = Call{Kind: CallAcquire, Sent: now, Timeout: a.o.CallTimeout + wait, n: a.callN}
	return a.inflight, time.Time{}
}

// Lost records that call got no answer within its timeout.
func (a *Acquire) Lost(now time.Time, call Call) {
	a.Answer(now, call, wire.Issued{}, ErrOutcomeUnknown)
}

// Answer reads the answer to call at now; an answer to a call no longer
// in flight is ignored.
func (a *Acquire) Answer(now time.Time, call Call, is wire.Issued, err error) {
	if call.n == 0 || call.n != a.inflight.n || a.done {
		return
	}
	a.inflight = Call{}
	if call.Kind == CallQueryRequest && wire.CodeOf(err) == "NOT_FOUND" {
		a.lost, a.backoff, a.retryAt = false, AcquireBackoffMin, now // not granted (yet): send the same acquire again
		return
	}
	if classify(err) != answerLost {
		a.lostRun = 0
	}
	switch classify(err) {
	case answerOK:
		a.doneSent = call.Sent
		a.answered(now, is)
	case answerRefused:
		if a.locking && errors.Is(err, wire.ErrWaitTimeout) && (a.lockUntil.IsZero() || now.Before(a.lockUntil)) {
			a.retryAt = now // not yet: ask again at once, keeping the place in the queue
			return
		}
		a.finish(wire.Issued{}, fmt.Errorf("client: acquire %s: %w", a.req.Resource, err))
	case answerLost:
		if a.lostRun++; a.lostRun >= a.o.AcquireLostMax {
			a.unreachable = fmt.Errorf("client: acquire %s: request %s: %w after %d calls without an answer (last: %w)",
				a.req.Resource, a.req.RequestID, ErrUnreachable, a.lostRun, err)
		}
		a.lost = true
		from := a.m.state
		to, _ := a.m.Step(EvAcquireLost)
		a.trans = append(a.trans, Transition{From: from, To: to, Event: EvAcquireLost})
		a.sleep(now)
	default: // a definite "nothing changed, try again"
		a.sleep(now)
	}
}

// answered reads a grant returned for the request ID. A HELD grant ends
// the acquire. A grant that already ended (the answer was lost long ago)
// is a final answer for that ID: a fresh ID is drawn and sent at once.
func (a *Acquire) answered(now time.Time, is wire.Issued) {
	if is.Grant == nil || is.Grant.RequestID != a.req.RequestID || is.Status == nil && !is.Grant.HeldStatement() ||
		is.Status != nil && is.Status.Grant != is.Grant.Digest() {
		a.finish(wire.Issued{}, fmt.Errorf("%w: acquire %s: answer is not about request %s", ErrBadAnswer, a.req.Resource, a.req.RequestID))
		return
	}
	// A fresh grant carrying its own HELD statement comes without a
	// status: it says HELD itself.
	if is.Status != nil && is.Status.State != grant.StateHeld {
		a.req.RequestID, a.firstSent = a.newID(), time.Time{}
		a.lost, a.backoff, a.retryAt = false, AcquireBackoffMin, now
		return
	}
	a.finish(is, nil)
}

func (a *Acquire) finish(is wire.Issued, err error) {
	a.done, a.issued, a.err = true, is, err
}

// sleep waits out the backoff (with jitter) before the next call, and
// doubles it.
func (a *Acquire) sleep(now time.Time) {
	d := time.Duration(float64(a.backoff) * (0.5 + a.jitter()))
	a.backoff = min(a.backoff*2, AcquireBackoffMax)
	a.retryAt = now.Add(d)
}
