package core

import (
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Downgrade is the pure core of a write lease's downgrade (POST
// /v1/downgrade, wire.DowngradeRequest): the write lease on a read/write
// lock becomes a reader's lease in one registry write. It keeps the
// request ID it was given until a definite answer — a lost answer is sent
// again under the same ID after DowngradeRetryWait, because the registry
// answers a retry with the reader's grant it already made, and a fresh ID
// would ask to downgrade a lease that already ended — and it reads the
// answer: the reader's grant must name wire.ReadResource of the lock,
// with the write lease's fence and owner. Like Acquire it does no I/O and
// reads no clock: Session.Downgrade drives it (Next, make the call, Step
// its Answer or Lost, Next again), and the lease scenarios
// (testdata/lease) drive it as the Python client's core is driven.
//
// The write lease itself is told first (Downgrading): from that step on
// it builds no envelope, since the registry admits other readers once
// every HELD statement of the write lease has expired, on the promise
// that its holder stopped writing. There is no end but the shell's: a
// downgrade whose answers keep being lost is asked again until the
// caller gives up. Not safe for concurrent use.
type Downgrade struct {
	o        Limits
	write    *grant.Grant
	op       string
	req      wire.DowngradeRequest
	retryAt  time.Time
	inflight Call
	callN    uint64
	done     bool
	granted  *Granted
	err      error
}

// DowngradeRetryWait is the pause between two sends of a downgrade whose
// answer was lost (the same request ID: the registry answers a retry with
// the grant it made).
const DowngradeRetryWait = 100 * time.Millisecond

// DowngradeInput is one event a downgrade's shell feeds Downgrade.Step:
// an Answer (Issued: the reader's grant) or a Lost.
type DowngradeInput interface{ downgradeInput() }

func (Answer) downgradeInput() {}
func (Lost) downgradeInput()   {}

// DowngradeReady is what a downgrade's core leaves its shell after a step.
type DowngradeReady struct {
	// Call is the downgrade to send now (Next only; Kind CallNone: none):
	// CallDowngrade, its Downgrade the request, its Timeout the lease's
	// call timeout.
	Call Call
	// Wake is when to call Next again (zero: never, because the
	// downgrade is done or a call is in flight).
	Wake time.Time
	// Granted is the reader's lease to start (NewLease), once the
	// registry answered; every later DowngradeReady carries it again.
	Granted *Granted
	// Err is the final answer when it is not a grant: the registry's
	// definite refusal (the write lease expired, was broken, is not this
	// owner's), or ErrBadAnswer.
	Err error
}

// Done reports whether the downgrade has its final answer.
func (r DowngradeReady) Done() bool { return r.Granted != nil || r.Err != nil }

// NewDowngrade returns the core of the downgrade of write, the grant of
// a write lease on a read/write lock whose operation is operationID,
// under requestID (drawn once by the shell). o must have its defaults
// filled.
func NewDowngrade(o Limits, write *grant.Grant, operationID, requestID string) *Downgrade {
	return &Downgrade{o: o, write: write, op: operationID,
		req: wire.DowngradeRequest{Resource: write.Resource, Lease: write.Lease, RequestID: requestID}}
}

func (d *Downgrade) ready(call Call, wake time.Time) DowngradeReady {
	return DowngradeReady{Call: call, Wake: wake, Granted: d.granted, Err: d.err}
}

// Next returns the call to make at now (recorded as in flight), or none
// and the instant to look again.
func (d *Downgrade) Next(now time.Time) DowngradeReady {
	switch {
	case d.done || d.inflight.Kind != CallNone:
		return d.ready(Call{}, time.Time{})
	case now.Before(d.retryAt):
		return d.ready(Call{}, d.retryAt)
	}
	d.callN++
	req := d.req
	ttl := time.Duration(d.write.TTLMs) * time.Millisecond
	d.inflight = Call{Kind: CallDowngrade, Sent: now, Timeout: d.o.LeaseCallTimeout(ttl), Grant: d.write, Downgrade: &req, n: d.callN}
	return d.ready(d.inflight, time.Time{})
}

// Step feeds the downgrade the answer to its call (or its loss) at now.
func (d *Downgrade) Step(now time.Time, in DowngradeInput) DowngradeReady {
	switch in := in.(type) {
	case Answer:
		d.answer(now, in.Call, in.Issued, in.Err)
	case Lost:
		d.answer(now, in.Call, wire.Issued{}, ErrOutcomeUnknown)
	}
	return d.ready(Call{}, time.Time{})
}

func (d *Downgrade) answer(now time.Time, call Call, is wire.Issued, err error) {
	if d.done || call.n == 0 || call.n != d.inflight.n {
		return
	}
	d.inflight = Call{}
	switch classify(err) {
	case answerOK:
		d.answered(now, call.Sent, is)
	case answerRefused:
		d.done, d.err = true, err
	default: // lost, or CONFLICT: the same request again
		d.retryAt = now.Add(DowngradeRetryWait)
	}
}

// answered reads the registry's answer, for the call sent at sent: the
// reader's lease counts from the send plus the answer's ExpiresAfterMs
// less the TTL (as an acquire's, Granted.From), never later than now.
func (d *Downgrade) answered(now, sent time.Time, is wire.Issued) {
	d.done = true
	w, g := d.write, is.Grant
	if g == nil || g.Resource != wire.ReadResource(w.Resource) || g.FenceToken != w.FenceToken || g.Owner != w.Owner {
		d.err = fmt.Errorf("client: downgrade %s: %w: the registry answered another grant", w.Resource, ErrBadAnswer)
		return
	}
	from := sent
	if ms := is.ExpiresAfterMs; ms > 0 {
		from = sent.Add(time.Duration(ms)*time.Millisecond - time.Duration(g.TTLMs)*time.Millisecond)
	}
	if from.After(now) {
		from = now
	}
	d.granted = &Granted{Issued: is, OperationID: d.op, From: from}
}

// RequestID is the downgrade's request ID (the same on every send).
func (d *Downgrade) RequestID() string { return d.req.RequestID }
