// Package lockstate is the registry's decisions: every rule about a
// resource's lock, as a pure function of (the resource's Record, the
// registry-wide Settings, an input, now, Limits) to (the new record and
// the request entries to write, the answer). It is the core of the
// registry; package registry is its shell.
//
// What it decides: fences (the next fence is max(highestFence, floor,
// the range's start) + 1, asserted before and after: DecideAcquire and
// grantLease), expiry judged by the registry clock's now and the
// lock-delay after it (Normalize), FIFO waiters, the warm handoff on a
// release or break, the vanished-waiter skip, renewals, floors, policy
// generations, revoked epochs and fence-range bumps (Decide*); what a
// request entry, written once at grant, says of its lease now
// (EntryState, Retained); and what a lock view shows (LockView,
// ResourceInfo).
//
// # One core, two drivers
//
// The shell (registry.Registry) reads a Snapshot from the Store, calls one
// decision with the registry clock's now, commits what it returns by
// compare-and-swap, and signs the answer; registry.Acquisition steps a
// waiting acquire one decision at a time. The simulator (package sim)
// drives the same Registry, and so these same decisions, on its own event
// queue and clock. A decision never calls back into its caller: what it
// needs to know (the snapshot's record, settings, which request entries
// exist) is an argument, and what it wants done is its result.
//
// # What it may not do
//
// No I/O, no clock (now is an argument), no randomness, no iteration over
// a map, no goroutines: the same arguments always give the same result.
// It imports only the standard library's pure packages, grant, wire and
// internal/assert; deps_test.go pins that list and the source's use of
// package time, and shows the check failing on a package that breaks it.
package lockstate
