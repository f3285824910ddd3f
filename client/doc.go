// Package client is the fencegate Go SDK: it acquires a lease from the
// registry, keeps it, builds the mutation envelopes the gate checks, cuts
// long tasks into ordered segments, and recovers writes whose outcome is
// unknown.
//
// # Writing under a lock
//
// A worker connects (client/httpclient.Connect gives a Session, the
// registry's trust bundle and a Verifier in one call), waits for the lock
// with Session.Lock, and writes with Apply: the envelope, the gate's check
// inside the caller's own transaction and the settlement with the lease
// are one call, and a stale write comes back as gate.ErrStaleOwner with
// nothing changed:
//
//	w, err := httpclient.Connect(ctx, "http://127.0.0.1:7420", httpclient.WithBearerToken(token))
//	db, err := sqlgate.OpenLocal(ctx, "totals.db", w.Verifier) // or a postgres:// URL
//	lease, err := w.Lock(ctx, wire.AcquireRequest{Resource: "totals/2026-07-19"})
//	defer lease.Release(ctx)
//	_, err = client.Apply(ctx, lease, db, payload, func(ctx context.Context, tx *sql.Tx) error {
//		_, err := tx.ExecContext(ctx, `UPDATE totals SET total = 200 WHERE day = '2026-07-19'`)
//		return err
//	})
//
// A service that receives writes from workers over the network runs the
// gate itself; the worker sends with Send. LockSet takes several
// resources at once or none (no deadlock whatever order callers name
// them in) and holds them as one lease, each member with its own grant
// for its own gate. Election campaigns for leadership on the same leases. Without Go, `fencegate lock -- CMD` runs
// any program under a lease. The examples module (examples/ in the
// repository) holds each of these as a program CI runs.
//
// # Lease states
//
// A Lease follows the specification's states exactly: REQUESTED → HELD →
// RENEWING → HELD; an uncertain renewal or query → OWNERSHIP_UNKNOWN;
// registry-confirmed expiry → EXPIRED; a successful release → RELEASED.
// The transitions are one explicit table (client/core/state.go); an
// illegal one is a programmer error and panics. State(), Done() and Ctx() expose them, as
// etcd's concurrency.Session does: Ctx() is cancelled the moment ownership
// stops being certain, and a NEW context is issued if the registry later
// confirms the same grant HELD.
//
// # What the client can and cannot promise
//
// A lease can be lost at any moment without the client knowing: the
// process pauses, the network partitions. The client stops producing new
// effects as soon as it knows (a lost or late renewal, its local deadline,
// a stale status proof) but it never assumes that writes it already sent
// were revoked. What makes a stale write harmless is the gate: every
// envelope carries the grant's fence, and the resource rejects a fence
// below its highest.
//
// # Core and shell
//
// Every decision is in two pure cores in package client/core, as
// etcd-io/raft's RawNode: a core.Lease per lease (the state machine, the
// renewal and proof timing, which call to make next and how to read its
// answer, whether an envelope may be built, what Release must wait for)
// and a core.Acquire per acquire (the request ID kept until a final
// answer, the query by request ID after a lost answer, the backoff, the
// hand-off of a grant to its lease). They do no I/O, read no clock and
// never call their shell. Session and Lease are their shells — a
// goroutine, timers, locks and a Transport — and only feed them: Next
// names the call to make, the shell makes it, Step takes its answer. The
// simulator drives the same cores the same way with simulated time and a
// simulated network, so what it checks is this code. A program that only
// takes locks needs none of client/core.
//
// # Release drains
//
// A status proof outlives a release. An envelope built by Lease.Envelope
// is unsettled until Lease.Settle (the resource answered it); Release
// sends the release only once the latest proof attached to an unsettled
// envelope can no longer be accepted (its validUntil plus DrainMargin),
// so a copy of a write whose answer was lost cannot land after the
// registry freed the resource. ReleaseNoDrain skips the wait for callers
// that know better.
//
// # Time and transport
//
// Time (Clock), randomness (Options.Rand) and the network (Transport) are
// injected. With Options.Manual no goroutine runs: the caller calls
// Lease.Tick. The client's clock never judges expiry; it only decides when
// the client stops on its own. Its safety margins assume a bounded clock
// rate error: a client clock running far slow can build an envelope after
// the registry ended the lease (property_test.go shows it), which the gate
// then rejects by its own clock and fence.
//
// # Packages
//
//   - client: Session (Acquire, Lock, LockSet), Lease (renew, Envelope,
//     Release, Tick), LockSet, Election, RunSegments, Resolver
//     (MUTATION_UNKNOWN).
//   - client/httpclient: the production Transport over the registry's
//     HTTP API; registry.Direct is the in-process one.
//   - client/core: the pure cores the shells and the simulator drive.
//   - client/lockexec: run a command under a lease (fencegate lock, elect).
//   - client/reconcile: the durable SQLite reconciliation queue.
//   - testkit/clienttest: fake clock, lossy transport, fixtures and the
//     end-to-end scenarios run on every registry store (its etcd_test.go:
//     on embedded etcd).
package client
