package sim

import (
	"context"
	"errors"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// resource is a protected resource and its gate: the gate's fence state,
// receipts, quarantine and alarms, and the business data, all in simulated
// storage and committed atomically per decision (the simulator is single
// threaded, so a decision is its own transaction). The decision itself is
// the real gate: Policy.Authenticate, then gate.Decide.
type resource struct {
	w        *world
	name     string
	clock    partyClock
	state    gate.State
	receipts map[receiptKey]gate.Receipt
	byOp     map[string][]gate.Receipt
	applied  int // business changes applied
	fenced   int // of which passed authentication and the fence check
}

type receiptKey struct{ fence, seq uint64 }

// origin says who produced an envelope, for the checker.
type origin struct {
	writer *worker // nil for the adversary
	attack attackKind
	buggy  bool // a worker's deliberate wrong-payload resend
}

func newResource(w *world, name string, clock partyClock) *resource {
	return &resource{
		w: w, name: name, clock: clock,
		state:    gate.State{Resource: name, Mode: gate.ModeEnforce},
		receipts: make(map[receiptKey]gate.Receipt, 16),
		byOp:     make(map[string][]gate.Receipt, 4),
	}
}

// apply is applyFencedMutation as the resource runs it, at the current
// simulated instant, for an envelope sent by caller.
func (r *resource) apply(m *gate.Mutation, caller string, o origin) gate.Outcome {
	now := r.clock.at(r.w.now)
	before := r.state.HighestFence
	if r.w.cfg.Break == BreakFence {
		return r.applyLeaseOnly(m, o)
	}
	if r.w.cfg.Break == BreakAuthOrder && m.FenceToken <= gate.CounterMax {
		r.state.HighestFence = max(r.state.HighestFence, m.FenceToken) // the bug: state touched before auth
	}
	v, err := r.authenticate(m, caller)
	if err != nil {
		out := gate.OutcomeOf(err)
		r.w.chk.decision(r, m, nil, o, out, before)
		r.w.mix(uint64(outcomeIndex(out)), m.FenceToken, m.SegmentSeq)
		r.w.tracef("gate %s: %s fence %d segment %d by %s", r.name, out, m.FenceToken, m.SegmentSeq, caller)
		return out
	}
	r.w.chk.observeStatus(r, v, now)
	k := receiptKey{m.FenceToken, m.SegmentSeq}
	in := gate.Input{Verified: v, State: r.state, Now: now, StatusSkewMax: r.w.cfg.skewBound()}
	if p, ok := r.receipts[k]; ok {
		in.Prior = &p
	}
	switch {
	case r.w.cfg.StatusQuery && gate.NeedsStatus(in):
		in.Status = r.queryStatus(v)
	case !r.w.cfg.StatusQuery && v.Status != nil:
		in.Status = gate.EvidenceFromProof(v.Status)
	}
	in = r.breakInput(in)
	d := gate.Decide(in)
	if d.Store {
		r.state = d.State
	}
	if d.Alarm {
		r.w.counts.RegressionAlarms++
		r.w.alarm()
	}
	if d.Outcome == gate.Accepted {
		r.receipts[k] = d.Receipt
		r.byOp[m.OperationID] = append(r.byOp[m.OperationID], d.Receipt)
		r.applied++
		r.fenced++
	}
	if r.w.cfg.Break == BreakRegression {
		r.state.Paused = false
	}
	r.w.chk.decision(r, m, v, o, d.Outcome, before)
	r.w.mix(uint64(outcomeIndex(d.Outcome)), m.FenceToken, m.SegmentSeq)
	r.w.tracef("gate %s: %s fence %d segment %d by %s", r.name, d.Outcome, m.FenceToken, m.SegmentSeq, caller)
	return d.Outcome
}

func (r *resource) authenticate(m *gate.Mutation, caller string) (*gate.Verified, error) {
	if r.w.cfg.Break != BreakAuth {
		return r.w.keys.policy.Authenticate(m, caller)
	}
	// The bug: parse, never verify.
	g, err := grant.ParseGrant(m.Grant)
	if err != nil || m.Validate() != nil {
		return nil, &gate.Rejection{Outcome: gate.BadProof, Reason: "unparsable"}
	}
	v := &gate.Verified{Mutation: *m, Grant: g, GrantDigest: g.Digest(), Root: m.OperationRoot()}
	if s, err := grant.ParseStatus(m.Status); err == nil {
		v.Status = s
	}
	return v, nil
}

// breakInput applies the segment and regression bugs to a decision input.
func (r *resource) breakInput(in gate.Input) gate.Input {
	fence, seq := in.Verified.Mutation.FenceToken, in.Verified.Mutation.SegmentSeq
	switch r.w.cfg.Break {
	case BreakSegments:
		if fence == in.State.HighestFence && in.Verified.Root == in.State.Root {
			in.State.LastSegmentSeq = seq - 1
		} else if fence > in.State.HighestFence && seq != 1 {
			in.Verified.Mutation.SegmentSeq = 1
		}
	case BreakRegression:
		// The bug: trust the registry. A grant proven current whose fence
		// does not advance resets the fence state to just below it.
		in.State.Paused = false
		if in.Prior != nil && in.Prior.GrantDigest != in.Verified.GrantDigest {
			in.Prior = nil
		}
		if fence <= in.State.HighestFence && in.Prior == nil {
			in.State.HighestFence, in.State.LastSegmentSeq, in.State.Root = fence-1, 0, grant.Digest{}
		}
	}
	return in
}

// applyLeaseOnly is the negative control: the resource trusts that a
// writer which sends believes it holds the lease, and applies.
// It still keeps a record per operation, so MUTATION_UNKNOWN can be
// answered, but checks nothing.
func (r *resource) applyLeaseOnly(m *gate.Mutation, o origin) gate.Outcome {
	before := r.state.HighestFence
	r.applied++
	r.state.HighestFence = max(r.state.HighestFence, m.FenceToken)
	r.byOp[m.OperationID] = append(r.byOp[m.OperationID], gate.Receipt{FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq})
	r.w.chk.decision(r, m, nil, o, gate.Accepted, before)
	r.w.mix(uint64(outcomeIndex(gate.Accepted)), m.FenceToken, m.SegmentSeq)
	return gate.Accepted
}

// queryStatus is the gate's linearizable status query to the registry,
// made while the decision holds the fence row. It goes over the simulated
// network only in that a partition between gate and registry fails it; a
// failure never accepts.
func (r *resource) queryStatus(v *gate.Verified) gate.StatusEvidence {
	revokedBelow := r.w.keys.revokedBelow
	if r.w.cut(pGate, pRegistry, r.w.now) {
		return gate.EvidenceFromQuery("", 0, errPartitioned, revokedBelow)
	}
	is, err := r.w.reg.Status(context.Background(), v.Grant)
	if err != nil {
		return gate.EvidenceFromQuery("", 0, err, revokedBelow)
	}
	return gate.EvidenceFromQuery(is.Status.State, is.Status.IssuerEpoch, nil, revokedBelow)
}

var errPartitioned = errors.New("sim: gate and registry are partitioned")

// judge answers "did this operation happen?" (MUTATION_UNKNOWN recovery).
func (r *resource) judge(operationID string, fence uint64) gate.Verdict {
	return gate.Judge(r.byOp[operationID], r.state.HighestFence, fence).Verdict
}
