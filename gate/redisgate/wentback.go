package redisgate

import (
	"fmt"

	"github.com/fencegate/fencegate/gate"
)

// The store going back. Redis can lose writes it acknowledged: a restart
// without an append-only file fsynced on every write, a crash of the
// machine under appendfsync everysec or no, a failover to a replica that
// lagged, a FLUSHALL or an eviction. Whatever the cause, the gate's
// state comes back older than it was, or not at all, and the decision
// would run on it as if the lost accepts had never happened: a fence the
// lost state had superseded would be ACCEPTED.
//
// The rule: every gate write moves a resource's state forward —
// highestFence rises, and under one fence the last segment; the floor and
// the minimum policy generation rise; enforce is final; a pause is lifted
// only by a resume, which records a new floor instant. So a state read
// from Redis that is behind one this Gate saw stored (committed, or read)
// before, or absent where the Gate saw one, was lost by the store. The
// Gate then answers FENCE_REGRESSION, as for a registry that went back:
// it stores the state raised to what it saw (highestFence never goes
// down), paused in enforce mode, with a FENCE_REGRESSION alarm, by the
// same compare-and-set or MULTI/EXEC as any decision; an operator
// resumes the resource with a registry floor above every fence issued
// before (gate.Resume).
//
// Why it is safe: the verdict is committed only if the store still holds
// the state it was drawn from, so a read that a concurrent writer has
// since overtaken (a late view, not a loss) commits nothing and is
// decided again; and a state this Gate saw was stored, so one behind it
// can only come from a store that lost it. What it cannot see: a loss of
// a resource this Gate never saw, or has forgotten (the memory is bounded
// by CachedStatesMax, and ends with the process). That is why enforce
// mode needs a Redis that does not lose acknowledged writes.
//
// This is not a second decision: nothing here judges a mutation. It
// judges whether the state the decision would run on is the store's
// true state, and when it is not, refuses to decide on it.

// behind returns why st, read from the store, is behind seen, a state
// this Gate saw stored before, or "" if it is not. A pause that went
// missing is not among the signs: a resume whose floor is not above the
// floor of the one before changes only the floor's instant, which two
// gates' clocks need not order; a store that lost a pause lost it with
// the write that made it, and only appendfsync always keeps that.
func behind(st, seen gate.FenceState) string {
	switch {
	case st.HighestFence < seen.HighestFence:
		return fmt.Sprintf("it holds highestFence %d, below the %d this gate saw stored", st.HighestFence, seen.HighestFence)
	case st.HighestFence == seen.HighestFence && st.LastSegmentSeq < seen.LastSegmentSeq:
		return fmt.Sprintf("it holds fence %d at segment %d, below the segment %d this gate saw stored",
			st.HighestFence, st.LastSegmentSeq, seen.LastSegmentSeq)
	case st.Floor < seen.Floor:
		return fmt.Sprintf("it holds floor %d, below the %d this gate saw stored", st.Floor, seen.Floor)
	case st.MinPolicyGeneration < seen.MinPolicyGeneration:
		return fmt.Sprintf("it holds minimum policy generation %d, below the %d this gate saw stored",
			st.MinPolicyGeneration, seen.MinPolicyGeneration)
	case seen.Mode == gate.ModeEnforce && st.Mode != gate.ModeEnforce:
		return fmt.Sprintf("it is in %s mode, though this gate saw it in enforce mode", st.Mode)
	}
	return ""
}

// wentBack returns why snap, read from Redis, shows that the store lost
// writes of resource it had acknowledged, and the furthest state this
// Gate saw stored; "" if it does not. After the store check found that
// Redis lost its data (storecheck.go), a resource with no state is such
// a loss too, whether this Gate saw it or not.
func (g *Gate) wentBack(resource string, snap snapshot) (string, gate.FenceState) {
	seen, ok := g.cache.seen(resource)
	switch lost := g.lostData(); {
	case !ok && snap.blob == "" && lost != "":
		return "its state is gone, and Redis lost its data: " + lost + "; it may have held a higher fence", seen
	case !ok:
		return "", seen
	case snap.blob == "":
		return fmt.Sprintf("its state is gone, though this gate saw highestFence %d (segment %d) stored",
			seen.HighestFence, seen.LastSegmentSeq), seen
	}
	return behind(snap.st, seen), seen
}

// restore returns st raised to seen wherever seen is further, and paused
// with why in enforce mode. highestFence is never lowered.
func restore(st, seen gate.FenceState, why string) gate.FenceState {
	out := st
	if seen.HighestFence > st.HighestFence || seen.HighestFence == st.HighestFence && seen.LastSegmentSeq > st.LastSegmentSeq {
		out.HighestFence, out.Root, out.LastSegmentSeq = seen.HighestFence, seen.Root, seen.LastSegmentSeq
		out.GrantDigest, out.GrantIssuedAt = seen.GrantDigest, seen.GrantIssuedAt
	}
	if seen.Floor > st.Floor || seen.Floor == st.Floor && seen.FloorAt.After(st.FloorAt) {
		out.Floor, out.FloorAt = seen.Floor, seen.FloorAt
	}
	out.MinPolicyGeneration = max(st.MinPolicyGeneration, seen.MinPolicyGeneration)
	if seen.Mode == gate.ModeEnforce {
		out.Mode = gate.ModeEnforce
	}
	if out.Mode == gate.ModeEnforce {
		out.Paused = true
		out.PausedReason = fmt.Sprintf("FENCE_REGRESSION: the state in Redis went back (%s); highestFence %d kept", why, out.HighestFence)
	}
	return out
}

// storeRegression is the answer to m when its resource's state went back
// (why; seen is what this Gate saw stored): FENCE_REGRESSION, the state
// restored and, in enforce mode, paused, with an alarm. In shadow mode
// the business change goes through, as for any shadow rejection, with
// the state restored and a shadow-log entry.
func storeRegression(v *gate.Verified, st, seen gate.FenceState, why string) gate.Decision {
	m := &v.Mutation
	next := restore(st, seen, why)
	rej := &gate.Rejection{Outcome: gate.FenceRegression, Resource: m.Resource, FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq,
		HighestFence: next.HighestFence, LastSegmentSeq: next.LastSegmentSeq, Recorded: true, Alarm: gate.AlarmRegression,
		Reason: fmt.Sprintf("Redis lost acknowledged writes of %s: %s; highestFence %d kept", m.Resource, why, next.HighestFence)}
	if m.FenceToken < next.HighestFence {
		rej.Also = gate.StaleOwner
	}
	d := gate.Decision{Outcome: gate.FenceRegression, Err: rej, State: next, Store: true, Alarm: true, AlarmKind: gate.AlarmRegression}
	if next.Paused {
		rej.Reason += ", resource paused"
	} else {
		d.Proceed, d.ShadowLog = true, true
	}
	return d
}
