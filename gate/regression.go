package gate

import (
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
)

// The regression rule. A status proof says "this grant was HELD at
// issuedAt"; it does not say "this grant is still the newest". A grant's
// own held statement (lockGrant.v1 heldUntil, StatusFromGrant) says the
// same at the grant's IssuedAt, and the rule reads it exactly as a proof:
// every "HELD statement" and "HELD proof" below is either. It
// outlives a release: A releases, B is granted a millisecond later, and
// A's proof stays valid for up to the registry's StatusProofTTLMs. So a
// lower fence carrying a fresh HELD proof is, on its own, an ordinary late
// write (STALE_OWNER), not evidence that the registry went backwards.
// FENCE_REGRESSION (alarm, and a pause in enforce mode) needs proof:
//
//   - a HELD statement about a lower fence issued after the grant at
//     highestFence (more than the skew bound after its IssuedAt, both by
//     the registry's clock), or a linearizable query answering HELD with
//     the fence row locked;
//   - two grants with one fence: an equal fence under another grant or
//     operation root, or a receipt at that segment from another grant;
//   - a grant at or below the floor of the last Resume issued after it;
//   - a grant above highestFence issued more than the skew bound before
//     the grant at highestFence (strictly: two replicas' clocks may be
//     exactly the bound apart): the registry issued the lower fence
//     after the higher one (a store restored from before the higher
//     grant, which then issued the same fences again).
//
// Why it is safe: in a registry whose history is consistent, a lower fence
// was granted before the higher one, and the registry says HELD about it
// only while it is the holder, which ends before the higher grant is
// issued (a release, or an expiry followed by a lock-delay of at least the
// skew bound). With the registry replicas' clocks within the skew bound of
// each other, such a statement's issuedAt is at most the higher grant's
// IssuedAt plus the bound. A restored etcd's revisions go backwards, but
// the wall-clock issue times of the statements it makes after the restore
// do not, so the rule holds across a restore. Where the evidence falls
// inside the bound, the gate asks the registry when it has a querier
// (Decision.Confirm) and otherwise rejects without pausing and records a
// REGRESSION_SUSPECTED alarm. No classification accepts anything: every
// fence below highestFence is rejected whatever this rule says.

// issueOrder is how a statement's issue time relates to a reference issue
// time, both by registry clocks, under the skew bound.
type issueOrder int

const (
	issuedBefore    issueOrder = iota + 1 // at least the bound before: certainly earlier
	issuedAfter                           // more than the bound after: certainly later
	issuedAmbiguous                       // within the bound, or the reference is unknown
)

func orderOf(t, ref time.Time, skew time.Duration) issueOrder {
	switch {
	case ref.IsZero():
		return issuedAmbiguous
	case t.After(ref.Add(skew)):
		return issuedAfter
	case !t.After(ref.Add(-skew)):
		return issuedBefore
	}
	return issuedAmbiguous
}

// belowFloor decides a fence at or below the floor an operator stated at
// the last Resume. Such a grant predates the repair: stale, unless the
// registry issued it after the repair, which means it went backwards again.
func belowFloor(in Input) Decision {
	v, st := in.Verified, in.State
	fence, issued := v.Mutation.FenceToken, v.Grant.IssuedAt
	ref := st.FloorAt
	switch orderOf(issued, ref, in.StatusSkewMax) {
	case issuedAfter:
		return regression(in, StaleOwner, fmt.Sprintf("grant with fence %d ≤ floor %d was issued at %s, after the resume at %s",
			fence, st.Floor, stamp(issued), stamp(ref)))
	case issuedBefore:
		return reject(in, StaleOwner, "fence %d ≤ floor %d stated at the resume of %s: a grant from before the repair",
			fence, st.Floor, stamp(ref))
	}
	return suspected(in, fmt.Sprintf("fence %d ≤ floor %d: grant issued at %s, within %s of the resume at %s",
		fence, st.Floor, stamp(issued), in.StatusSkewMax, stamp(ref)))
}

// twoGrantsOneFence returns why the mutation's grant and one the resource
// has accepted share a fence, or "".
func twoGrantsOneFence(in Input) string {
	v, st := in.Verified, in.State
	fence, seq := v.Mutation.FenceToken, v.Mutation.SegmentSeq
	switch {
	case fence == st.HighestFence && !st.GrantDigest.IsZero() && st.GrantDigest != v.GrantDigest:
		return fmt.Sprintf("fence %d == highest, accepted under grant %s, not %s", fence, st.GrantDigest, v.GrantDigest)
	case fence == st.HighestFence && st.HighestFence > 0 && v.Root != st.Root:
		return fmt.Sprintf("fence %d == highest under root %s, not %s", fence, st.Root, v.Root)
	case in.Prior != nil && in.Prior.GrantDigest != v.GrantDigest:
		return fmt.Sprintf("fence %d segment %d was accepted under grant %s, not %s", fence, seq, in.Prior.GrantDigest, v.GrantDigest)
	}
	return ""
}

// lowerFence decides a fence below highestFence (and above any floor):
// always a rejection, and FENCE_REGRESSION only on proof (see the rule
// above). A status that does not prove HELD is plain STALE_OWNER.
func lowerFence(in Input) Decision {
	v, st := in.Verified, in.State
	fence := v.Mutation.FenceToken
	ev := in.Status
	if code, why := ev.judge(in.Now, in.StatusSkewMax); code != "" {
		return reject(in, StaleOwner, "fence %d < highest %d (and %s)", fence, st.HighestFence, why)
	}
	if ev.Source == StatusFromQuery {
		return regression(in, StaleOwner, fmt.Sprintf("the registry says grant %s (fence %d) is HELD, yet fence %d was accepted",
			v.GrantDigest, fence, st.HighestFence))
	}
	switch orderOf(ev.IssuedAt, st.GrantIssuedAt, in.StatusSkewMax) {
	case issuedAfter:
		return regression(in, StaleOwner, fmt.Sprintf("fence %d < highest %d, but its HELD proof was issued at %s, after the grant at highest (issued %s)",
			fence, st.HighestFence, stamp(ev.IssuedAt), stamp(st.GrantIssuedAt)))
	case issuedBefore:
		return reject(in, StaleOwner, "fence %d < highest %d (its HELD proof was issued at %s, before the grant at highest, issued %s)",
			fence, st.HighestFence, stamp(ev.IssuedAt), stamp(st.GrantIssuedAt))
	}
	return confirmLower(in)
}

// issuedWellBefore reports whether t is more than skew before a known
// ref. Strictly more: a grant issued on a replica whose clock is exactly
// the bound behind another's may carry an issue time exactly the bound
// before the lower fence's in a consistent history (the Spin model found
// that pause with "at least").
func issuedWellBefore(t, ref time.Time, skew time.Duration) bool {
	return !ref.IsZero() && t.Add(skew).Before(ref)
}

// higherFenceIssuedBefore decides a fence above highestFence whose grant
// was issued more than the skew bound before the grant at highestFence. In
// a consistent history a higher fence is issued after every lower one, so
// the lower fence at highestFence was issued by a registry that had gone
// backwards: an alarm and, in enforce mode, a pause, as for any proven
// regression. Nothing is accepted, so highestFence keeps the fence the
// resource has built on until an operator resumes it.
func higherFenceIssuedBefore(in Input) Decision {
	v, st := in.Verified, in.State
	return regression(in, "", fmt.Sprintf("fence %d > highest %d, but its grant was issued at %s, before the grant at highest (issued %s)",
		v.Mutation.FenceToken, st.HighestFence, stamp(v.Grant.IssuedAt), stamp(st.GrantIssuedAt)))
}

// confirmLower settles a lower fence whose HELD proof is too close to the
// grant at highestFence to order: by the registry's word when the adapter
// asked (Input.Confirm), else as a suspected regression.
func confirmLower(in Input) Decision {
	v, st := in.Verified, in.State
	fence := v.Mutation.FenceToken
	why := fmt.Sprintf("fence %d < highest %d: its HELD proof (issued %s) is within %s of the grant at highest (issued %s)",
		fence, st.HighestFence, stamp(in.Status.IssuedAt), in.StatusSkewMax, stamp(st.GrantIssuedAt))
	c := in.Confirm
	switch {
	case c == nil:
		d := suspected(in, why)
		d.Confirm = true
		return d
	case c.Failure != "":
		return suspected(in, why+"; the registry could not be asked: "+c.Failure)
	case c.State == grant.StateHeld && !c.EpochRevoked:
		return regression(in, StaleOwner, why+"; the registry still says it is HELD")
	}
	return reject(in, StaleOwner, "%s; the registry says it is %s", why, c.State)
}

// regression rejects on proof that the registry went backwards: an alarm,
// and in enforce mode a pause. highestFence is kept.
func regression(in Input, also Outcome, why string) Decision {
	d := reject(in, FenceRegression, "%s: the registry went backwards; resource paused, highestFence kept", why)
	d.Err.(*Rejection).Also = also
	d.Alarm, d.AlarmKind, d.Store = true, AlarmRegression, true
	d.State.Paused = true
	d.State.PausedReason = fmt.Sprintf("FENCE_REGRESSION: fence %d from grant %s vs highest %d",
		in.Verified.Mutation.FenceToken, in.Verified.GrantDigest, in.State.HighestFence)
	return d
}

// suspected rejects as STALE_OWNER with a REGRESSION_SUSPECTED alarm and
// no pause: the evidence cannot tell a regression from a late write.
func suspected(in Input, why string) Decision {
	d := reject(in, StaleOwner, "%s; a regression is possible, not proven: alarm recorded, resource not paused", why)
	d.Alarm, d.AlarmKind = true, AlarmSuspected
	return d
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(grant.TimeLayout)
}
