// Package gate is fencegate's resource-side acceptance point,
// applyFencedMutation: the one place a protected write is accepted or
// rejected. This package is the pure core — authentication, the fence
// decision and receipts — shared by the SQL adapter (gate/sqlgate) and the
// simulator. It does no I/O and reads no clock: time comes in as an
// argument and status comes in as evidence.
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
// with another payload is QUARANTINED; a grant
// below the resource's minimum policy generation is POLICY_STALE. Then the
// status: if it does not prove HELD, a fence below highestFence is
// STALE_OWNER (the reason names the status problem) and any other fence
// gets the status code (NOT_HELD, EPOCH_REVOKED, PROOF_EXPIRED). A grant
// proven HELD whose fence is below highestFence, or equal to it under
// another operation root or another grant, or that meets a receipt of
// another grant at its fence, means the registry went backwards:
// FENCE_REGRESSION, an alarm row, and the resource is paused until an
// operator resumes it after raising the registry's fence floor above
// highestFence (Resume). That rejection also matches STALE_OWNER (or
// ROOT_MISMATCH) with errors.Is, so "a smaller fence is always
// STALE_OWNER" holds for callers that only branch on that. Last, the
// segment rules: a larger fence only with segmentSeq 1, an equal fence
// only with lastSegmentSeq+1 (SEGMENT_GAP otherwise).
//
// On every rejection highestFence is unchanged; it never decreases.
//
// # Status freshness
//
// A status proof is fresh iff now + StatusSkewMax < validUntil, where now
// is the gate's clock and StatusSkewMax (default 500 ms) bounds how far
// that clock may lag the registry's. Beyond the bound a stale proof may
// look fresh; the fence check still rejects the stale writer (as
// FENCE_REGRESSION if its proof says HELD), which is why the fence, not the
// lease, is the safety mechanism. A StatusQuerier replaces proofs with a
// linearizable query made while the fence row is locked; a query error
// never accepts.
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
