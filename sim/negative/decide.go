package negative

import (
	"context"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// The functions the controls in negative.go put in place of a product
// part: four wrappers of gate.Decide, and a registry store that drops the
// contents each write was decided on.

// decidePolluting raises highestFence on a rejection: the bug of a gate
// that touches resource state before it has decided.
func decidePolluting(in gate.Input) gate.Decision {
	d := gate.Decide(in)
	if d.Outcome != gate.Accepted && d.Outcome != gate.Replayed && d.Outcome != gate.FenceRegression {
		d.Store = true
		d.State.HighestFence = max(in.State.HighestFence, in.Verified.Mutation.FenceToken)
	}
	return d
}

// decideIgnoringSegments accepts whatever segment comes: the state is
// doctored so that the segment looks like the next one.
func decideIgnoringSegments(in gate.Input) gate.Decision {
	if d := gate.Decide(in); d.Outcome != gate.SegmentGap {
		return d
	}
	v := in.Verified
	in.State.HighestFence, in.State.Root, in.State.GrantDigest = v.Mutation.FenceToken, v.Root, v.GrantDigest
	in.State.LastSegmentSeq = v.Mutation.SegmentSeq - 1
	return gate.Decide(in)
}

// decideTrustingRegistry lets a grant proven current through whatever its
// fence: the state is doctored to just below it (the spec's "clear the
// highest value to restore traffic").
func decideTrustingRegistry(in gate.Input) gate.Decision {
	in.State.Paused = false
	fence := in.Verified.Mutation.FenceToken
	if in.Prior != nil && in.Prior.GrantDigest != in.Verified.GrantDigest {
		in.Prior = nil
	}
	if fence <= in.State.HighestFence && in.Prior == nil && in.Status.ProvesHeld(in.Now, in.StatusSkewMax) {
		in.State.HighestFence, in.State.LastSegmentSeq, in.State.Root, in.State.GrantDigest = fence-1, 0, grant.Digest{}, grant.Digest{}
		in.State.Floor = 0
	}
	return gate.Decide(in)
}

// decideOldRule is the rule before issue 12: any fence below highestFence
// whose status proves HELD is a FENCE_REGRESSION, which pauses the
// resource — on an ordinary late write too.
func decideOldRule(in gate.Input) gate.Decision {
	d := gate.Decide(in)
	if d.Outcome != gate.StaleOwner || !in.Status.ProvesHeld(in.Now, in.StatusSkewMax) {
		return d
	}
	m := &in.Verified.Mutation
	d.Outcome, d.Alarm, d.AlarmKind, d.Store, d.Confirm = gate.FenceRegression, true, gate.AlarmRegression, true, false
	d.State = in.State
	d.State.Paused, d.State.PausedReason = true, "FENCE_REGRESSION (the old rule)"
	d.Err = &gate.Rejection{Outcome: gate.FenceRegression, Also: gate.StaleOwner, Resource: m.Resource, FenceToken: m.FenceToken,
		SegmentSeq: m.SegmentSeq, HighestFence: in.State.HighestFence, Reason: "the old rule: a lower fence proven HELD", Recorded: true,
		Alarm: gate.AlarmRegression}
	return d
}

// decideSilently refuses on evidence of a regression without telling
// anyone: no alarm, no pause.
func decideSilently(in gate.Input) gate.Decision {
	d := gate.Decide(in)
	if !d.Alarm {
		return d
	}
	m := &in.Verified.Mutation
	d.Outcome, d.Alarm, d.AlarmKind, d.Store, d.Confirm, d.State = gate.StaleOwner, false, "", false, false, in.State
	d.Err = &gate.Rejection{Outcome: gate.StaleOwner, Resource: m.Resource, FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq,
		HighestFence: in.State.HighestFence, Reason: "refused without an alarm"}
	return d
}

// revisionsOnly is the registry's store with its content compares taken
// away (--break content-compare): each Write's RecordWas and SettingsWas
// are dropped before registry/memstore sees it, so a commit holds on the
// revisions alone. After a restore that hands revisions out again, a
// registry replica that decided on a record it cached before the restore
// commits over the restored record: the checker counts such commits
// (LostUpdates).
type revisionsOnly struct{ registry.Store }

func (s revisionsOnly) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	w.RecordWas, w.SettingsWas = nil, nil
	return s.Store.Commit(ctx, w)
}
