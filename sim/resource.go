package sim

import (
	"errors"

	"github.com/fencegate/fencegate/gate"
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
	state(resource string) gate.State
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

// apply is applyFencedMutation as the resource's service runs it, at the
// current simulated instant, for an envelope sent by caller.
func (r *resource) apply(m *gate.Mutation, caller string, o origin) gate.Outcome {
	before := r.g.state(r.name)
	r.w.chk.observeStatus(m, r.clock.at(r.w.now))
	ran := false
	rc, err := r.g.apply(m, caller, func() { ran = true })
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
	}
	return out
}

// judge answers "did this operation happen?" (MUTATION_UNKNOWN recovery).
func (r *resource) judge(operationID string, fence uint64) gate.Verdict {
	return r.g.query(r.name, operationID, fence).Verdict
}

// decided is one decision as the checker sees it.
type decided struct {
	out           gate.Outcome
	applied       bool // the business change happened (ACCEPTED, or shadow mode let it through)
	alarm         gate.AlarmKind
	before, after gate.State
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

func alarmNote(a gate.AlarmKind) string {
	if a == "" {
		return ""
	}
	return " (alarm " + string(a) + ")"
}
