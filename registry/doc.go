// Package registry is fencegate's canonical lock registry: per-resource
// leases with strictly increasing fence tokens, server-side TTLs, lock-delay
// after expiry, a request-ID index for lost-response recovery, FIFO waiters,
// issuer epochs, policy generations and fence floors. It signs lockGrant.v1
// grants and short-lived grantStatus.v1 proofs with the grant package.
//
// # Core and shell
//
// The decisions are pure functions of (record, input, now, config) in the
// core_*.go files: no I/O, no clock, no randomness. The Registry methods are
// the shell: read from a Store, decide, compare-and-swap, sign. The
// simulator runs the same core over the memory store with a fake clock.
//
// # Backend revision
//
// A grant's BackendRevision is the store revision of the transaction that
// recorded it, learnt after commit: it is the create revision of the grant's
// request-ID entry, which that transaction created and nothing rewrites
// until retention deletes it. It is therefore truthful (that revision really
// contains the grant) and linearizable, and needs no guess before commit.
//
// # What a lease does not do
//
// A lease can be lost at any moment: a paused owner keeps running after its
// lease expired. Safety comes from the fence token, checked by the gate at
// the resource, not from the lease.
package registry
