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
// backs off, reads every answer, and hands a grant over to its lease
// (AcquireReady.Granted). Like Lease it does no I/O and reads no clock;
// Session.Acquire drives it with a Transport, the simulator with a
// simulated network, both the same way: Next, make the call, Step its
// Answer (or Lost), Next again. Not safe for concurrent use.
type Acquire struct {
	o         Limits
	req       wire.AcquireRequest
	set       *wire.LockSetRequest // a lock set's acquire (NewSetAcquire); nil: a plain one
	issuedSet []wire.Issued        // a set's grants, once granted
	m         Machine
	jitter    func() float64 // in [0, 1)
	firstSent time.Time      // client clock, first send of this request ID
	lastSent  time.Time      // client clock, last send of it
	doneSent  time.Time      // client clock, send of the call whose answer ended the acquire
	lost      bool           // the last acquire's answer was lost: ask by request ID next
	needID    bool           // the request ID's grant already ended: a fresh one (NewRequest) comes next
	backoff   time.Duration
	retryAt   time.Time
	inflight  Call
	callN     uint64
	lostRun   int // calls in a row without an answer
	// locking: a WAIT_TIMEOUT is not final, the same request asks again
	// at once and keeps its place in the queue (Begin.LockChunk), until
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
	// unanswered (AcquireReady.Unreachable).
	unreachable error
}

// NewAcquire returns the core of an acquire of req (its RequestID
// set). jitter draws in [0, 1) for the backoff from the shell's seeded
// rand: a source of numbers, nothing more. o must have its defaults
// filled.
func NewAcquire(o Limits, req wire.AcquireRequest, jitter func() float64) *Acquire {
	return &Acquire{o: o, req: req, m: NewMachine(), jitter: jitter, backoff: AcquireBackoffMin}
}

// View returns the acquire as its shell reads it between steps.
func (a *Acquire) View() AcquireView {
	return AcquireView{Request: a.req, FirstSent: a.firstSent,
		ReusableAt: a.lastSent.Add(time.Duration(a.req.TTLMs+a.req.WaitMs)*time.Millisecond + a.o.AcquireMargin)}
}

// ready hands out what the steps since the last one left the shell, and
// the final answer once there is one.
func (a *Acquire) ready(now time.Time, call Call, wake time.Time) AcquireReady {
	r := AcquireReady{Call: call, Wake: wake, Unreachable: a.unreachable, NeedsRequestID: a.needID}
	r.Transitions, a.trans = a.trans, nil
	switch {
	case a.done && a.err != nil:
		r.Err = a.err
	case a.done:
		r.Granted = &Granted{Issued: a.issued, Set: a.issuedSet, OperationID: a.req.OperationID, From: a.leaseFrom(now)}
	}
	return r
}

// leaseFrom is Granted.From, handed over at now.
func (a *Acquire) leaseFrom(now time.Time) time.Time {
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

// Step feeds the acquire one input at now and returns what follows (no
// call: Next says which call is due).
func (a *Acquire) Step(now time.Time, in AcquireInput) AcquireReady {
	switch in := in.(type) {
	case Answer:
		a.answer(now, in.Call, reply{in.Issued, in.Set}, in.Err)
	case Lost:
		a.answer(now, in.Call, reply{}, ErrOutcomeUnknown)
	case Begin:
		a.backoff, a.retryAt, a.lostRun, a.unreachable = AcquireBackoffMin, time.Time{}, 0, nil
		a.locking, a.lockChunk, a.lockUntil = in.LockChunk > 0, in.LockChunk, in.LockUntil
	case NewRequest:
		if a.needID {
			a.req.RequestID, a.needID = in.RequestID, false
		}
	}
	return a.ready(now, Call{}, time.Time{})
}

// Next returns the call to make at now, or none and the instant to look
// again (zero: never, because the acquire is done or a call is in
// flight), with the transitions since the last AcquireReady and the
// final answer once there is one.
func (a *Acquire) Next(now time.Time) AcquireReady {
	call, wake := a.next(now)
	return a.ready(now, call, wake)
}

func (a *Acquire) next(now time.Time) (Call, time.Time) {
	switch {
	case a.done || a.needID || a.inflight.Kind != CallNone:
		return Call{}, time.Time{}
	case now.Before(a.retryAt):
		return Call{}, a.retryAt
	}
	a.callN++
	if a.lost && a.set == nil {
		a.inflight = Call{Kind: CallQueryRequest, Sent: now, Timeout: a.o.CallTimeout, Request: a.req, n: a.callN}
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
	a.inflight = Call{Kind: CallAcquire, Sent: now, Timeout: a.o.CallTimeout + wait, Request: a.req, SetRequest: a.setRequest(), n: a.callN}
	return a.inflight, time.Time{}
}

// answer reads the answer to call at now; an answer to a call no longer
// in flight is ignored.
func (a *Acquire) answer(now time.Time, call Call, is reply, err error) {
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
		if a.set != nil {
			a.answeredSet(now, is.set)
			return
		}
		a.answered(now, is.one)
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
		a.lost = true // a set has no query by request ID: it sends the same acquire again, which answers from the members' entries
		a.step(EvAcquireLost)
		a.sleep(now)
	default: // a definite "nothing changed, try again"
		a.sleep(now)
	}
}

func (a *Acquire) step(ev Event) {
	from := a.m.state
	to, _ := a.m.Step(ev)
	a.trans = append(a.trans, Transition{From: from, To: to, Event: ev})
}

// answered reads a grant returned for the request ID. A HELD grant ends
// the acquire. A grant that already ended (the answer was lost long ago)
// is a final answer for that ID: the shell is asked for a fresh one
// (NeedsRequestID), which is sent at once.
func (a *Acquire) answered(now time.Time, is wire.Issued) {
	if is.Grant == nil || is.Grant.RequestID != a.req.RequestID || is.Status == nil && !is.Grant.HeldStatement() ||
		is.Status != nil && is.Status.Grant != is.Grant.Digest() {
		a.finish(wire.Issued{}, fmt.Errorf("%w: acquire %s: answer is not about request %s", ErrBadAnswer, a.req.Resource, a.req.RequestID))
		return
	}
	// A fresh grant carrying its own HELD statement comes without a
	// status: it says HELD itself.
	if is.Status != nil && is.Status.State != grant.StateHeld {
		a.needID, a.firstSent = true, time.Time{}
		a.lost, a.backoff, a.retryAt = false, AcquireBackoffMin, now
		return
	}
	a.finish(is, nil)
}

// finish ends the acquire: with a grant, the lease's machine steps
// REQUESTED → HELD here and the lease core carries on from HELD.
func (a *Acquire) finish(is wire.Issued, err error) {
	a.done, a.issued, a.err = true, is, err
	if err == nil {
		a.step(EvAcquireOK)
	}
}

// sleep waits out the backoff (with jitter) before the next call, and
// doubles it.
func (a *Acquire) sleep(now time.Time) {
	d := time.Duration(float64(a.backoff) * (0.5 + a.jitter()))
	a.backoff = min(a.backoff*2, AcquireBackoffMax)
	a.retryAt = now.Add(d)
}
