package client

import (
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// AcquireCore is one acquire's pure core: it keeps the request ID until a
// final answer, asks for the grant by that ID after a lost answer (and
// sends the same acquire again only once the registry says it has none),
// backs off, and reads every answer. Like LeaseCore it does no I/O and
// reads no clock; Session.Acquire drives it with a Transport, the
// simulator with a simulated network. Not safe for concurrent use.
type AcquireCore struct {
	o         Options
	req       registry.AcquireRequest
	m         Machine
	newID     func() string
	jitter    func() float64 // in [0, 1)
	firstSent time.Time      // client clock, first send of this request ID
	lastSent  time.Time      // client clock, last send of it
	lost      bool           // the last acquire's answer was lost: ask by request ID next
	backoff   time.Duration
	retryAt   time.Time
	inflight  Call
	callN     uint64
	done      bool
	issued    registry.Issued
	err       error
	trans     []Transition
}

// NewAcquireCore returns the core of an acquire of req (its RequestID
// set). newRequestID draws a fresh ID for when the registry answers that
// this one's grant already ended; jitter draws in [0, 1) for the backoff.
// o must have its defaults filled.
func NewAcquireCore(o Options, req registry.AcquireRequest, newRequestID func() string, jitter func() float64) *AcquireCore {
	return &AcquireCore{o: o, req: req, m: NewMachine(), newID: newRequestID, jitter: jitter, backoff: AcquireBackoffMin}
}

// Request returns the request as it will be sent (the current request ID).
func (a *AcquireCore) Request() registry.AcquireRequest { return a.req }

// FirstSent is when the current request ID was first sent (zero: never):
// the registry may have granted at any instant since, so a lease's first
// deadline counts from it.
func (a *AcquireCore) FirstSent() time.Time { return a.firstSent }

// ReusableAt is when an attempt whose answer never came is presumed over
// (client clock): TTL + WaitMs + AcquireMargin after its last send. Until
// then no other request ID may be used for the resource.
func (a *AcquireCore) ReusableAt() time.Time {
	return a.lastSent.Add(time.Duration(a.req.TTLMs+a.req.WaitMs)*time.Millisecond + a.o.AcquireMargin)
}

// Done reports whether the acquire has a final answer: the grant, HELD,
// or the error that ends it (a definite refusal, or ErrBadAnswer).
func (a *AcquireCore) Done() (done bool, is registry.Issued, err error) {
	return a.done, a.issued, a.err
}

// Transitions returns and forgets the REQUESTED transitions since the
// last call.
func (a *AcquireCore) Transitions() []Transition {
	t := a.trans
	a.trans = nil
	return t
}

// Restart lets a new Acquire call on a pending attempt ask at once: the
// backoff of the call that gave up is forgotten, the request ID and
// whether its last answer was lost are kept.
func (a *AcquireCore) Restart() {
	a.backoff, a.retryAt = AcquireBackoffMin, time.Time{}
}

// Next returns the call to make at now, or CallNone and the instant to
// look again (zero: never, because the acquire is done or a call is in
// flight).
func (a *AcquireCore) Next(now time.Time) (Call, time.Time) {
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
	wait := time.Duration(a.req.WaitMs) * time.Millisecond
	a.inflight = Call{Kind: CallAcquire, Sent: now, Timeout: a.o.CallTimeout + wait, n: a.callN}
	return a.inflight, time.Time{}
}

// Lost records that call got no answer within its timeout.
func (a *AcquireCore) Lost(now time.Time, call Call) {
	a.Answer(now, call, registry.Issued{}, ErrOutcomeUnknown)
}

// Answer reads the answer to call at now; an answer to a call no longer
// in flight is ignored.
func (a *AcquireCore) Answer(now time.Time, call Call, is registry.Issued, err error) {
	if call.n == 0 || call.n != a.inflight.n || a.done {
		return
	}
	a.inflight = Call{}
	if call.Kind == CallQueryRequest && registry.CodeOf(err) == "NOT_FOUND" {
		a.lost, a.backoff, a.retryAt = false, AcquireBackoffMin, now // not granted (yet): send the same acquire again
		return
	}
	switch classify(err) {
	case answerOK:
		a.answered(now, is)
	case answerRefused:
		a.finish(registry.Issued{}, fmt.Errorf("client: acquire %s: %w", a.req.Resource, err))
	case answerLost:
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
func (a *AcquireCore) answered(now time.Time, is registry.Issued) {
	if is.Grant == nil || is.Status == nil || is.Grant.RequestID != a.req.RequestID || is.Status.Grant != is.Grant.Digest() {
		a.finish(registry.Issued{}, fmt.Errorf("%w: acquire %s: answer is not about request %s", ErrBadAnswer, a.req.Resource, a.req.RequestID))
		return
	}
	if is.Status.State != grant.StateHeld {
		a.req.RequestID, a.firstSent = a.newID(), time.Time{}
		a.lost, a.backoff, a.retryAt = false, AcquireBackoffMin, now
		return
	}
	a.finish(is, nil)
}

func (a *AcquireCore) finish(is registry.Issued, err error) {
	a.done, a.issued, a.err = true, is, err
}

// sleep waits out the backoff (with jitter) before the next call, and
// doubles it.
func (a *AcquireCore) sleep(now time.Time) {
	d := time.Duration(float64(a.backoff) * (0.5 + a.jitter()))
	a.backoff = min(a.backoff*2, AcquireBackoffMax)
	a.retryAt = now.Add(d)
}
