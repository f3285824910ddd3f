// Package registry is fencegate's canonical lock registry: per-resource
// leases with strictly increasing fence tokens, server-side TTLs, lock-delay
// after expiry, a request-ID index for lost-response recovery, FIFO waiters,
// issuer epochs, policy generations and fence floors. It signs lockGrant.v1
// grants and short-lived grantStatus.v1 proofs with the grant package.
//
// # Core and shell
//
// The decisions are pure functions of (record, settings, input, now,
// limits) in package lockstate, which imports no I/O and reads no clock
// (its deps_test.go pins both). The Registry methods are the shell: read
// a Snapshot from the Store, call one decision with the clock's now,
// compare-and-swap what it returns, sign the answer; a decision never
// calls back into the shell. Time comes only from the injected Clock
// (expiry, the waits' timers, the sweep) and randomness only from
// WithRand (the backoff between retries). A waiting acquire is an
// Acquisition, stepped by Acquire with store watches and timers, and by
// the simulator with its event queue: the simulator runs the same shell
// and core, waiters and handoffs included.
//
// # Backend revision
//
// A grant's BackendRevision is the store revision of the transaction that
// recorded it, learnt after commit: it is the create revision of the grant's
// request-ID entry, which that transaction created and nothing rewrites
// until retention deletes it. It is therefore truthful (that revision really
// contains the grant) and linearizable, and needs no guess before commit.
//
// # Time
//
// Only the registry clock judges expiry: a lease whose expiresAt <= now is
// over, and the next grant waits until expiresAt + LockDelayMs (after an
// expiry only; a release frees at once). A status proof's validUntil is
// min(now + StatusProofTTLMs, expiry - ClockSkewMaxMs), never before now.
// Replicas sharing a store each use their own clock; their skew must stay
// within ClockSkewMaxMs, which LockDelayMs must cover.
//
// # Waiting
//
// A waiting acquire puts a ticket (owner, request ID, deadline and the
// acquire's parameters) at the tail of the resource's queue in the record
// itself, so the order is one order for every replica. A release grants
// the lease to the head ticket in the same write (a warm handoff: the
// waiter only has to notice); after an expiry the head claims it itself
// once lock-delay has passed. A non-waiting acquire never jumps a live
// queue (ErrBusy). A request that already has an answer is answered from
// its entry and never queues: joining the queue compares the request's
// entry as absent, so a cached snapshot that cannot show the entry fails
// the compare instead of queueing a ghost. A ticket leaves when it is
// granted, its caller cancels (best effort; a lease handed to a caller
// that left stays its grant, for a retry of the request ID to collect, or
// to expire), its deadline passes, or it was not seen
// during a free resource's claim window: the head has HandoffClaimMs/2
// alone, then every live waiter stamps itself (SeenMs), and once the
// window has passed the head and every unstamped waiter leave in one
// write (the next head gets a full window). A waiter that vanishes just
// as a release hands it the lease holds it until its TTL runs out, like
// any crashed holder. Waiters wake on store watches and poll at most every
// WaitPollMsMax for what no write announces.
//
// # Request IDs
//
// A request ID is scoped to its owner. Its entry (the grant, a digest of
// the parameters, the state HELD) is written once, in the granting
// transaction, and never again: how and when its lease ended is read from
// the resource's record (its holder, the ended leases it remembers, its
// fences: lockstate.EntryState), so a lock cycle writes its record twice
// and its entry once (an entry an earlier version wrote again at its
// lease's end keeps the final state it holds). A retry with the same
// parameters gets the same grant with a fresh status, other parameters
// get ErrRequestMismatch. Entries are kept RequestRetentionMs after the
// lease ended, as the record places that end; a live grant's entry is
// never removed. The granting write also puts the entry's item in the
// sweep index (SweepItem: when to look at it next), and SweepRequests
// walks that index from its oldest end, so it reads what is due, never
// the whole request index.
//
// # Counting semaphores
//
// An acquire with Permits N takes one permit of the semaphore named by
// its resource: N slots, each an ordinary resource (wire.SlotResource)
// with its own record, fences, holder and lock-delay, and one record
// under the semaphore's name that holds N (Record.Permits, set by the
// first acquire, never changed) and the FIFO queue across the slots. A
// step decides on the semaphore's record (lockstate.DecideSemaphore,
// with the slots' records listed just before), then takes the free slot
// it names as a non-waiting acquire of that slot (lockstate.DecideAcquire
// on the slot's record): two compare-and-swaps, never one transaction, so
// the queue orders who tries first and each slot's record alone decides
// who holds it. A waiting permit acquire wakes on watches of the
// semaphore's record and of every slot's, and polls as any waiter.
//
// # What a lease does not do
//
// A lease can be lost at any moment: a paused owner keeps running after its
// lease expired. Safety comes from the fence token, checked by the gate at
// the resource, not from the lease.
package registry
