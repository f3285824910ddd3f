package gate

import (
	"context"
	"fmt"
	"time"
)

// UpstreamReceipts finds the receipts an upstream gate stored. A job's
// authority is the receipt of the accept that enqueued it.
type UpstreamReceipts interface {
	// ReceiptAt returns the receipt for (resource, fence, seq), or nil if
	// there is none. An error means the answer is unknown (the job is not
	// decided; run it again later).
	ReceiptAt(ctx context.Context, resource string, fence, seq uint64) (*Receipt, error)
}

// JobInput is everything one job decision depends on. DecideJob is a pure
// function of it.
type JobInput struct {
	Job      *Job
	Verified *Verified  // from Policy.AuthenticateJob
	State    FenceState // the target's fence state, read with its row locked
	// Prior is the target's receipt for (target, fence, jobSeq), if any.
	Prior *Receipt
	// Upstream is the upstream receipt for (resource, fence, segmentSeq)
	// of the job, if any.
	Upstream *Receipt
	Now      time.Time // the gate's clock (receipt time only)
}

// DecideJob is the gate decision for a job at its target, in this
// precedence:
//
//  1. a target receipt for (fence, jobSeq) from the same grant with the
//     same payload → REPLAYED (a re-run after a crash or a lost ACK);
//  2. the target is paused → RESOURCE_PAUSED;
//  3. that receipt with another payload → QUARANTINED;
//  4. the grant's policy generation is below the target's minimum →
//     POLICY_STALE;
//  5. no upstream receipt for the job's (resource, fence, segmentSeq)
//     whose ID, grant and root are the job's → STALE_OWNER if fence <
//     highestFence, else NOT_HELD (cause ErrNoUpstreamReceipt);
//  6. fence < highestFence → STALE_OWNER: a newer owner's job has been
//     applied here, and an older owner's may never follow it; so is a
//     fence at or below the floor of the target's last Resume;
//  7. fence == highestFence under another root or grant, or a receipt at
//     (fence, jobSeq) from another grant → ROOT_MISMATCH;
//  8. fence > highestFence → ACCEPTED iff jobSeq == 1, else SEGMENT_GAP;
//  9. fence == highestFence → ACCEPTED iff jobSeq == lastSegmentSeq+1,
//     else SEGMENT_GAP (an earlier job has not run yet: run it later).
//
// Unlike Decide it reads no status: the upstream receipt proves that the
// upstream gate accepted the write under this fence while the owner held
// the lease, and the fence order at the target keeps a superseded owner's
// job from landing after a newer owner's. So no case is FENCE_REGRESSION:
// an upstream receipt proves a past accept, never a current holder.
// highestFence never decreases. Shadow mode lets rejections through as
// Decide does.
func DecideJob(in JobInput) Decision {
	base := Input{Verified: in.Verified, State: in.State, Prior: in.Prior, Now: in.Now}
	d, settled := decideBeforeStatus(base)
	if !settled {
		d = decideJobFence(in, base)
	}
	d = applyMode(in.State.Mode, d)
	assertDecided(base, d)
	return d
}

func decideJobFence(in JobInput, base Input) Decision {
	v, st := in.Verified, in.State
	fence, seq := v.Mutation.FenceToken, v.Mutation.SegmentSeq
	if why := upstreamProblem(in); why != "" {
		d := reject(base, NotHeld, "%s: the job has no authority", why)
		if fence < st.HighestFence {
			d = reject(base, StaleOwner, "fence %d < highest %d (and %s)", fence, st.HighestFence, why)
		}
		d.Err.(*Rejection).Cause = ErrNoUpstreamReceipt
		return d
	}
	switch {
	case fence < st.HighestFence:
		return reject(base, StaleOwner, "fence %d < highest %d: a newer owner's job has been applied to %s", fence, st.HighestFence, st.Resource)
	case st.Floor > 0 && fence <= st.Floor:
		return reject(base, StaleOwner, "fence %d at or below the floor %d of the target's last resume", fence, st.Floor)
	case fence == st.HighestFence && v.Root != st.Root:
		return reject(base, RootMismatch, "fence %d == highest under root %s, not %s", fence, st.Root, v.Root)
	case fence == st.HighestFence && !st.GrantDigest.IsZero() && st.GrantDigest != v.GrantDigest:
		return reject(base, RootMismatch, "fence %d == highest, applied under grant %s, not %s", fence, st.GrantDigest, v.GrantDigest)
	case in.Prior != nil && in.Prior.GrantDigest != v.GrantDigest:
		return reject(base, RootMismatch, "job %d under fence %d was applied under grant %s, not %s", seq, fence, in.Prior.GrantDigest, v.GrantDigest)
	case fence > st.HighestFence && seq != 1:
		return reject(base, SegmentGap, "fence %d > highest %d must start at job 1, got %d", fence, st.HighestFence, seq)
	case fence == st.HighestFence && seq != st.LastSegmentSeq+1:
		return reject(base, SegmentGap, "fence %d: job %d is not the next after %d", fence, seq, st.LastSegmentSeq)
	}
	return accept(base)
}

// upstreamProblem returns "" when in.Upstream is the receipt the job
// names, or why it is not.
func upstreamProblem(in JobInput) string {
	j, v, up := in.Job, in.Verified, in.Upstream
	switch {
	case up == nil:
		return fmt.Sprintf("no upstream receipt for %s fence %d segment %d", j.Resource, j.FenceToken, j.SegmentSeq)
	case up.Resource != j.Resource || up.FenceToken != j.FenceToken || up.SegmentSeq != j.SegmentSeq:
		return fmt.Sprintf("upstream receipt is for %s fence %d segment %d", up.Resource, up.FenceToken, up.SegmentSeq)
	case up.GrantDigest != v.GrantDigest || up.OperationRoot != v.Root:
		return fmt.Sprintf("upstream receipt %s is under grant %s root %s, not the job's", up.ID(), up.GrantDigest, up.OperationRoot)
	case up.Digest() != j.UpstreamReceipt:
		return fmt.Sprintf("upstream receipt is %s, the job names %s", up.ID(), j.UpstreamReceipt)
	}
	return ""
}
