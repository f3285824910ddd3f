// Package gate is fencegate's resource-side acceptance point,
// applyFencedMutation: the one place a protected write is accepted or
// rejected. This package is the pure core — authentication, the fence
// decision and receipts — shared by every adapter (gate/sqlgate,
// gate/memgate, gate/objgate, gate/redisgate), which the simulator drives
// as production does. It does no I/O and reads no clock: time comes in as
// an argument and status comes in as evidence.
//
// A service author configures an adapter with a Policy (and optionally a
// StatusQuerier), sends it Mutations, branches on the Outcome of its
// answer (OutcomeOf, errors.Is with ErrStaleOwner and the other
// sentinels), and reads a resource's FenceState and a lost write's
// Answer. Decide is the decision itself, documented below and on the
// function. How an adapter runs it inside its store's atomic step —
// the status evidence, the registry query with the state locked, the
// invariant checked before a store — is package gate/adapt, for adapter
// authors.
//
// # The decision
//
// Steps 1–4 (Policy.Authenticate) never read or write resource state:
//
//  1. strict parse of the envelope (MALFORMED), the grant and the status
//     statement (BAD_PROOF);
//  2. the grant proof, and the status proof if present, against the trust
//     bundle (BAD_PROOF; a revoked issuer epoch is EPOCH_REVOKED);
//  3. binding: resource, lease, operation root and fence of the envelope
//     equal the grant's, the status statement names this grant, the
//     operation class is allowed (BINDING_MISMATCH);
//  4. the caller's authenticated identity equals the grant owner
//     (IDENTITY_MISMATCH).
//
// Steps 5–6 (Decide) run with the resource's fence row locked, in the
// precedence documented on Decide: an exact replay (same grant, same
// payload) returns the original receipt whatever the current status (it
// changes nothing and is what a lost-ACK retry needs); a paused resource
// answers RESOURCE_PAUSED to everything else; a replay by the same grant
// with another payload is QUARANTINED; a grant below the resource's
// minimum policy generation is POLICY_STALE. Then the fence: a fence at or
// below the floor of the last Resume is from before the operator's repair
// (STALE_OWNER); two grants with one fence is FENCE_REGRESSION; a fence
// below highestFence is STALE_OWNER, and FENCE_REGRESSION only on proof
// (the regression rule, below). A fence above highestFence whose grant
// was issued well before the grant at highestFence is FENCE_REGRESSION
// too. A fence at or above highestFence needs a
// status that proves HELD (NOT_HELD, EPOCH_REVOKED, PROOF_EXPIRED
// otherwise) and then the segment rules: a larger fence only with
// segmentSeq 1, an equal fence only with lastSegmentSeq+1 (SEGMENT_GAP
// otherwise).
//
// On every rejection highestFence is unchanged; it never decreases.
//
// # The regression rule
//
// A status proof says "HELD at issuedAt", not "still the newest": it
// outlives a release by up to the registry's status-proof TTL. So a lower
// fence with a fresh HELD proof is an ordinary late write, STALE_OWNER,
// with no alarm and no pause. FENCE_REGRESSION (an alarm row; in enforce
// mode the resource is paused until an operator resumes it with a
// registry fence floor above highestFence) needs evidence that the
// registry really went backwards, in this precedence:
//
//  1. a grant at or below the floor of the last Resume, issued (grant
//     IssuedAt) more than the skew bound after that Resume;
//  2. two grants with one fence: an equal fence under another grant or
//     operation root, or a receipt at (fence, segmentSeq) from another
//     grant (whatever the status: both grants are signed);
//  3. a lower fence with a HELD statement issued more than the skew bound
//     after the IssuedAt of the grant at highestFence (both registry
//     clocks), or a linearizable query answering HELD;
//  4. a higher fence whose grant was issued more than the skew bound
//     before the grant at highestFence: the registry issued the lower
//     fence after the higher one (a store restored from before the
//     higher grant, which then issued the same fences again). Nothing is
//     accepted, whatever the status.
//
// It is safe because in a registry whose history is consistent a lower
// fence was granted before the higher one and is said HELD only while it
// is the holder, which ends before the higher grant is issued (a release;
// an expiry plus a lock-delay of at least the skew bound). With replica
// clocks within the bound, its statements are issued at most the bound
// after the higher grant. A restored etcd's revisions go backwards; the
// wall-clock issue times of its new statements do not. Where the two
// instants are within the bound (or the grant at highestFence predates
// schema 6 and its issue time is unknown), Decide sets Decision.Confirm:
// an adapter with a StatusQuerier asks the registry about the grant with
// the row locked (HELD → FENCE_REGRESSION, otherwise STALE_OWNER), one
// without records a REGRESSION_SUSPECTED alarm and rejects as STALE_OWNER
// without pausing. A FENCE_REGRESSION rejection also matches STALE_OWNER
// (or ROOT_MISMATCH) with errors.Is, so "a smaller fence is always
// STALE_OWNER" holds for callers that only branch on that. The rule never
// decides an accept: every fence below highestFence is rejected, whatever
// it says; it decides only between an alarm, a pause and neither.
//
// # Status freshness
//
// A status proof is fresh iff now + StatusSkewMax < validUntil, where now
// is the gate's clock and StatusSkewMax (default 500 ms) bounds how far
// that clock may lag the registry's. Beyond the bound a stale proof may
// look fresh; the fence check still rejects the stale writer once a newer
// owner has written, which is why the fence, not the lease, is the safety
// mechanism. A StatusQuerier replaces proofs with a linearizable query
// made while the fence row is locked; a query error never accepts.
//
// # Jobs
//
// A follow-up job handed off by an accepted write (Job) is decided at its
// target by DecideJob, not Decide: it runs after its owner's status proof
// has expired, so its authority is the upstream receipt of the accept
// that enqueued it (AuthenticateJob checks the grant, with no identity
// step), and the target's own fence state orders the jobs: a superseded
// owner's job is STALE_OWNER, a re-run REPLAYED, an early one SEGMENT_GAP.
// Capability and CheckTarget declare what a target can do; shadow and
// enforce need fenced-write.
//
// # Modes
//
// Per resource: shadow computes and records every decision but lets the
// business change through (and never pauses); enforce rejects. A resource
// goes shadow → enforce and never back (ChangeMode).
package gate
