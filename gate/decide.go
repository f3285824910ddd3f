package gate

import (
	"fmt"
	"time"
)

// Input is everything one decision depends on. Decide is a pure function
// of it: no clock, no I/O, no randomness.
type Input struct {
	Verified *Verified  // from Policy.Authenticate
	State    FenceState // the resource's fence state, read with its row locked
	// Prior is the receipt stored for (resource, fence, segmentSeq), if any.
	Prior *Receipt
	// Status is the evidence about the grant's current state. It is only
	// consulted when NeedsStatus(in) is true, so an adapter may leave it
	// empty (and skip a registry query) otherwise.
	Status StatusEvidence
	// Confirm is the registry's linearizable answer about the grant, asked
	// with the fence row locked because a Decide of this same input
	// returned Decision.Confirm; nil until then.
	Confirm       *StatusEvidence
	Now           time.Time     // the gate's clock
	StatusSkewMax time.Duration // Policy.StatusSkewMax
}

// Decision is the outcome and what the adapter must do about it.
type Decision struct {
	Outcome Outcome
	// Err is nil for ACCEPTED; otherwise a *Rejection (for REPLAYED too,
	// so callers can tell a replay apart; IsSuccess treats it as success).
	Err error
	// State is the resource's state after the decision. It differs from
	// Input.State only when Store is set.
	State FenceState
	// Receipt is the new receipt (ACCEPTED) or the original (REPLAYED).
	Receipt Receipt
	// Proceed: run the business change. True for ACCEPTED, and for every
	// outcome but REPLAYED in shadow mode.
	Proceed bool
	// Store: write State and insert Receipt (ACCEPTED), or write State
	// (the pause of a FENCE_REGRESSION in enforce mode).
	Store bool
	// Quarantine: record the differing payload (QUARANTINED).
	Quarantine bool
	// Alarm: record an alarm row of kind AlarmKind.
	Alarm     bool
	AlarmKind AlarmKind
	// Confirm: the evidence is ambiguous (a lower fence whose HELD proof
	// was issued within the skew bound of the grant at highestFence). An
	// adapter with a StatusQuerier asks it about the grant (QueryEvidence)
	// with the row still locked, sets Input.Confirm and decides again;
	// one without acts on this decision: STALE_OWNER with a
	// REGRESSION_SUSPECTED alarm, no pause.
	Confirm bool
	// ShadowLog: record that shadow mode let a rejected mutation through.
	ShadowLog bool
}

// AlarmKind is the kind of an alarm row.
type AlarmKind string

// Alarm kinds.
const (
	// AlarmRegression: proof that the registry went backwards; in enforce
	// mode the resource is paused.
	AlarmRegression AlarmKind = "FENCE_REGRESSION"
	// AlarmSuspected: evidence that may mean a regression but may also be
	// an ordinary late write (inside the skew bound); the write was
	// rejected as STALE_OWNER and the resource was not paused. An
	// operator should look; a real regression soon gives proof.
	AlarmSuspected AlarmKind = "REGRESSION_SUSPECTED"
)

// NeedsStatus reports whether Decide will consult in.Status: false when
// the outcome is settled before the status step (replay, pause,
// quarantine, stale policy).
func NeedsStatus(in Input) bool {
	_, settled := decideBeforeStatus(in)
	return !settled
}

// Decide applies steps 5–6 of the gate decision (the package doc), in
// this precedence:
//
//  1. a receipt exists for (resource, fence, segmentSeq) from the same
//     grant with the same payload → REPLAYED (whatever the status or
//     pause);
//  2. the resource is paused → RESOURCE_PAUSED;
//  3. that receipt is from the same grant with another payload →
//     QUARANTINED;
//  4. the grant's policy generation is below the minimum → POLICY_STALE;
//  5. the fence is at or below the floor of the last Resume → STALE_OWNER,
//     or FENCE_REGRESSION if its grant was issued after that Resume
//     (belowFloor);
//  6. two grants share one fence: fence == highestFence under another
//     grant or root, or a receipt at (fence, segmentSeq) from another
//     grant → FENCE_REGRESSION, whatever the status (both grants are
//     signed; the registry never gives two grants one fence);
//  7. fence < highestFence → STALE_OWNER, or FENCE_REGRESSION when the
//     registry said HELD about this grant after it issued the grant at
//     highestFence (lowerFence states the rule);
//  8. fence > highestFence under a grant issued more than the skew bound
//     before the grant at highestFence → FENCE_REGRESSION, whatever the
//     status (the registry issued the lower fence after the higher one);
//  9. the status does not prove HELD → NOT_HELD, EPOCH_REVOKED or
//     PROOF_EXPIRED;
//  10. fence > highestFence → ACCEPTED iff segmentSeq == 1, else SEGMENT_GAP;
//  11. fence == highestFence → ACCEPTED iff segmentSeq == lastSegmentSeq+1,
//     else SEGMENT_GAP.
//
// highestFence never decreases. In shadow mode the same outcome is
// computed and recorded but the business change proceeds and nothing is
// paused.
func Decide(in Input) Decision {
	d, settled := decideBeforeStatus(in)
	if !settled {
		d = decideFence(in)
	}
	d = applyMode(in.State.Mode, d)
	assertDecided(in, d)
	return d
}

func decideBeforeStatus(in Input) (Decision, bool) {
	v, st := in.Verified, in.State
	// A receipt from another grant at this fence is not this grant's to
	// replay or quarantine: it is evidence for the fence step below.
	prior := in.Prior
	if prior != nil && prior.GrantDigest != v.GrantDigest {
		prior = nil
	}
	if p := prior; p != nil {
		if p.PayloadDigest == v.Mutation.PayloadDigest && p.OperationRoot == v.Root {
			d := reject(in, Replayed, "segment %d under fence %d already accepted with this payload; original receipt %s",
				v.Mutation.SegmentSeq, v.Mutation.FenceToken, p.ID())
			d.Receipt = *p
			return d, true
		}
	}
	if st.Paused {
		return reject(in, ResourcePaused, "resource %s is paused (%s); an operator must resume it", st.Resource, st.PausedReason), true
	}
	if p := prior; p != nil {
		d := reject(in, Quarantined, "segment %d under fence %d was accepted with payload %s (receipt %s); this one has %s",
			v.Mutation.SegmentSeq, v.Mutation.FenceToken, p.PayloadDigest, p.ID(), v.Mutation.PayloadDigest)
		d.Quarantine = true
		return d, true
	}
	if v.Grant.PolicyGeneration < st.MinPolicyGeneration {
		return reject(in, PolicyStale, "grant policy generation %d below the resource's minimum %d",
			v.Grant.PolicyGeneration, st.MinPolicyGeneration), true
	}
	return Decision{}, false
}

func decideFence(in Input) Decision {
	v, st := in.Verified, in.State
	fence, seq := v.Mutation.FenceToken, v.Mutation.SegmentSeq
	switch {
	case st.Floor > 0 && fence <= st.Floor:
		return belowFloor(in)
	case twoGrantsOneFence(in) != "":
		also := RootMismatch
		if fence < st.HighestFence {
			also = StaleOwner
		}
		return regression(in, also, twoGrantsOneFence(in))
	case fence < st.HighestFence:
		return lowerFence(in)
	case fence > st.HighestFence && issuedWellBefore(v.Grant.IssuedAt, st.GrantIssuedAt, in.StatusSkewMax):
		return higherFenceIssuedBefore(in)
	}
	if code, why := in.Status.judge(in.Now, in.StatusSkewMax); code != "" {
		return reject(in, code, "%s", why)
	}
	switch {
	case fence > st.HighestFence && seq != 1:
		return reject(in, SegmentGap, "fence %d > highest %d must start at segment 1, got %d", fence, st.HighestFence, seq)
	case fence == st.HighestFence && seq != st.LastSegmentSeq+1:
		return reject(in, SegmentGap, "fence %d: segment %d is not the next after %d", fence, seq, st.LastSegmentSeq)
	}
	return accept(in)
}

func accept(in Input) Decision {
	v, st := in.Verified, in.State
	st.HighestFence, st.Root, st.LastSegmentSeq = v.Mutation.FenceToken, v.Root, v.Mutation.SegmentSeq
	st.GrantDigest, st.GrantIssuedAt = v.GrantDigest, v.Grant.IssuedAt
	r := Receipt{
		Resource: st.Resource, FenceToken: v.Mutation.FenceToken, OperationRoot: v.Root,
		OperationID: v.Mutation.OperationID, SegmentSeq: v.Mutation.SegmentSeq,
		PayloadDigest: v.Mutation.PayloadDigest, GrantDigest: v.GrantDigest,
		AcceptedAt: in.Now.UTC().Truncate(time.Millisecond), Mode: st.Mode, Outcome: Accepted,
	}
	return Decision{Outcome: Accepted, State: st, Receipt: r, Proceed: true, Store: true}
}

func reject(in Input, o Outcome, format string, args ...any) Decision {
	m, st := &in.Verified.Mutation, in.State
	return Decision{Outcome: o, State: st, Err: &Rejection{
		Outcome: o, Resource: m.Resource, FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq,
		HighestFence: st.HighestFence, LastSegmentSeq: st.LastSegmentSeq,
		Reason: fmt.Sprintf(format, args...),
	}}
}

// applyMode turns a decision into what shadow mode does: let everything
// but a replay through, record instead of reject, never pause.
func applyMode(mode Mode, d Decision) Decision {
	recorded := d.Quarantine || d.Alarm
	if mode == ModeShadow && d.Outcome != Accepted && d.Outcome != Replayed {
		d.Proceed, d.ShadowLog, recorded = true, true, true
		if d.Outcome == FenceRegression {
			d.Store, d.State.Paused, d.State.PausedReason = false, false, ""
		}
	}
	if r, ok := d.Err.(*Rejection); ok {
		r.Recorded = recorded
		if d.Alarm {
			r.Alarm = d.AlarmKind
		}
	}
	return d
}
