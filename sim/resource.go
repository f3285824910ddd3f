package sim

import (
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/grant"
)

// resource is a protected resource behind a real gate adapter — memgate
// (the fast mode) or sqlgate on an in-memory SQLite database (--sql) —
// with the business change counted. The simulator calls the adapter's
// exported API exactly as a service would; it reads the fence state
// before and after each decision only to check it.
type resource struct {
	w       *world
	name    string
	clock   partyClock // the gate's
	g       gateAdapter
	applied int // business changes applied
	fenced  int // of which passed authentication and the fence check
}

// gateAdapter is what the simulator needs of an adapter: its Apply (or
// Run) with a business function, its state, its receipt query and its
// operator resume.
type gateAdapter interface {
	apply(m *gate.Mutation, caller string, business func()) (gate.Receipt, error)
	applyJob(hop string, j *gate.Job, business func()) (gate.Receipt, error)
	state(resource string) gate.FenceState
	query(resource, operationID string, fence uint64) gate.Answer
	resume(resource string, floor uint64) error
}

// origin says who produced an envelope, for the checker.
type origin struct {
	writer *worker // nil for the adversary
	attack attackKind
	buggy  bool // a worker's deliberate wrong-payload resend
}

func newResource(w *world, name string, clock partyClock, g gateAdapter) *resource {
	return &resource{w: w, name: name, clock: clock, g: g}
}

// errAnswerLost: the adapter's store failed during the write, so the
// service answers nothing (the write's outcome is unknown to its sender).
// The receipt returned with it is the committed one when the business
// change stood; otherwise nothing was committed.
var errAnswerLost = errors.New("sim: the store failed; no answer")

// apply is applyFencedMutation as the resource's service runs it, at the
// current simulated instant, for an envelope sent by caller. answered is
// false when the service could not answer (errAnswerLost).
func (r *resource) apply(m *gate.Mutation, caller string, o origin) (gate.Outcome, bool) {
	before := r.g.state(r.name)
	r.w.chk.observeStatus(m, r.clock.at(r.w.now))
	ran := false
	rc, err := r.g.apply(m, caller, func() { ran = true })
	lost := errors.Is(err, errAnswerLost)
	if lost {
		r.w.tracef("gate %s: %v; no answer for fence %d segment %d by %s", r.name, err, m.FenceToken, m.SegmentSeq, caller)
		if !ran {
			if after := r.g.state(r.name); after != before {
				panic(fmt.Sprintf("sim: a failed store call changed %s without committing a write: %+v → %+v", r.name, before, after))
			}
			return "", false
		}
		err = nil // committed: checked below as the accept it is
	}
	out, applied := gate.OutcomeOf(err), err == nil
	if applied {
		out = rc.Outcome // ACCEPTED, or what shadow mode let through
	}
	if !applied && ran {
		panic("sim: the business change ran but the write did not stand: " + err.Error())
	}
	var alarm gate.AlarmKind
	var rej *gate.Rejection
	if errors.As(err, &rej) {
		alarm = rej.Alarm
	}
	after := r.g.state(r.name)
	if applied {
		r.applied++
		if out == gate.Accepted {
			r.fenced++
		}
	}
	r.w.chk.decision(r, m, o, decided{out: out, applied: applied, alarm: alarm, before: before, after: after})
	r.w.mix(uint64(outcomeIndex(out)), m.FenceToken, m.SegmentSeq)
	r.w.tracef("gate %s: %s fence %d segment %d by %s%s", r.name, out, m.FenceToken, m.SegmentSeq, caller, alarmNote(alarm))
	if alarm == gate.AlarmRegression && r == r.w.res {
		r.w.alarm()
	}
	if out == gate.Accepted && r == r.w.res {
		r.w.acceptedUnder(m.Lease)
		r.w.handOff(m, rc)
	}
	return out, !lost
}

// query answers "did this operation happen?" (MUTATION_UNKNOWN recovery)
// with the adapter's receipt query.
func (r *resource) query(operationID string, fence uint64) gate.Answer {
	return r.g.query(r.name, operationID, fence)
}

// decided is one decision as the checker sees it.
type decided struct {
	out           gate.Outcome
	applied       bool // the business change happened (ACCEPTED, or shadow mode let it through)
	alarm         gate.AlarmKind
	before, after gate.FenceState
}

// statusOf parses an envelope's status statement, if any.
func statusOf(m *gate.Mutation) *grant.Status {
	if len(m.Status) == 0 {
		return nil
	}
	s, err := grant.ParseStatus(m.Status)
	if err != nil {
		return nil
	}
	return s
}

// evidenceOf is the HELD evidence an envelope carries itself, as the gate
// takes it (adapt.OwnEvidence): its status statement, else its
// grant's own held statement; false when it carries neither.
func evidenceOf(m *gate.Mutation) (gate.StatusEvidence, bool) {
	if s := statusOf(m); s != nil {
		return adapt.EvidenceFromProof(s), true
	}
	g, err := grant.ParseGrant(m.Grant)
	if err != nil || !g.HeldStatement() {
		return gate.StatusEvidence{}, false
	}
	return adapt.EvidenceFromGrant(g), true
}

func alarmNote(a gate.AlarmKind) string {
	if a == "" {
		return ""
	}
	return " (alarm " + string(a) + ")"
}
