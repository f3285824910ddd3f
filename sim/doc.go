// Package sim is fencegate's deterministic fault-injection simulator. It
// runs the product's own code: the registry (registry.Registry over
// registry/memstore, deciding with registry/lockstate, its waiting
// acquires stepped as registry.Acquisition, so FIFO waiters and the warm
// handoff are real), the client's cores
// (core.Acquire and core.Lease: every lease decision,
// envelope check and release drain), and a real gate adapter
// (gate/memgate; gate/sqlgate on in-memory SQLite with --sql; or, with
// --obj, two gate/objgate gates, each with its manifest cache, in front of
// one in-memory bucket; or, with --pg, gate/pggate, the decision in
// PL/pgSQL on a real PostgreSQL) over the real decision, with real signed grants and status proofs. Only time,
// the network, process scheduling and storage are simulated; sim/ holds
// no copy of lease, envelope, store or adapter logic.
//
// # Running it
//
//	fencegate sim --rounds 100000                   # the specification's gate, every fault (gate/memgate)
//	fencegate sim --rounds 10000 --sql              # the same on gate/sqlgate over SQLite (same counts)
//	fencegate sim --rounds 10000 --obj              # the same on two objgates sharing a bucket (same counts)
//	fencegate sim --rounds 2000 --pg --pg-dsn DSN   # the same inside PostgreSQL (a superuser DSN; same digest)
//	fencegate sim --rounds 20000 --skew-beyond-bound  # gate clock beyond the bound: detected, reported
//	fencegate sim --seed S --rounds N --round K --trace  # replay one round, event by event
//	fencegate sim --rounds 2000 --semaphore-rounds 2000  # then counting semaphores beside plain locks (semaphore.go)
//	fencegate sim --rounds 2000 --lockset-rounds 2000    # then lock sets beside plain locks on the same resources (lockset.go)
//	fencegate sim --rounds 1 --rwlock-rounds 2000        # then readers, writers and downgrades beside a plain lock (rwlock.go)
//
// The negative controls are not in the fencegate binary; from a checkout:
//
//	go run ./sim/cmd/simbreak --rounds 5000 --unsafe          # must report stale writes
//	go run ./sim/cmd/simbreak --rounds 5000 --break old-rule  # the old regression rule pauses on late copies
//	go run ./sim/cmd/simbreak --rounds 2000 --faults restore=1 --break content-compare  # lost updates
//	go run ./sim/cmd/simbreak --rounds 2000 --break lease-clock  # the lease clock before issue 42: HELD and effects past the deadline
//	go run ./sim/cmd/simbreak --rounds 2000 --alg ed25519 --faults adversary=1 --break batch-path  # batch paths unchecked: forged grants accepted
//	go run ./sim/cmd/simbreak --rounds 100 --faults none --unsafe --semaphore-rounds 300            # stale permit writes
//	go run ./sim/cmd/simbreak --rounds 100 --faults none --break stale-read --semaphore-rounds 300  # a slot twice, more than N
//	go run ./sim/cmd/simbreak --rounds 1 --faults none --break set-split --lockset-rounds 300   # a lock set granted and held in part
//	go run ./sim/cmd/simbreak --rounds 1 --faults none --break multilock --lockset-rounds 300   # member by member: waiters holding, deadlocks
//	go run ./sim/cmd/simbreak --rounds 1 --faults none --break no-poll --lockset-rounds 300     # waiters that only watch: sets stuck with every member free
//	go run ./sim/cmd/simbreak --rounds 1 --faults none --break two-step-downgrade --rwlock-rounds 300  # a writer inside a downgrade
//
// CI runs four seeds of 25,000 rounds (.ci/run); the long run, several
// seeds of a million rounds each, is in docs/guarantees.md ("The
// simulator").
//
// go test ./sim runs a 2,000-round run of every fault, the determinism and
// replay checks, the fast, SQL and object modes against each other, the negative
// controls and the scripted gaps below.
//
// # One seed
//
// A run is (seed, rounds, fault rates, commit). Round k draws everything
// — scheduling, delays, faults, clocks — from one PCG seeded with a value
// derived from (seed, k), so round k replays alone (--round k), and rounds
// run on any number of goroutines without changing a decision. Each round
// is a discrete-event simulation: a priority queue ordered by (simulated
// instant, sequence number), single threaded. Every executed event and
// every registry and gate answer is folded into an event-log digest; two
// runs of the same seed on the same commit have the same digest. Every
// violation carries the seed and a one-line command that replays its
// round with a trace.
//
// # A round
//
// Worker A acquires a resource and writes an operation of 2–6 segments
// through the gate, its lease's core renewing as it does in production;
// worker B starts within four
// seconds (or exactly when A releases, with FaultReleaseRace), queues in
// the registry's FIFO behind A for up to two seconds at a time and does
// the same; worker C joins only a registry restored from an old snapshot. Each
// fault of the matrix fires in a round with its configured rate: an owner
// freezes past its TTL between deciding to write and sending (the classic
// stale writer); renewal answers are lost; a later segment is sent before
// an earlier one; messages are duplicated or delivered seconds late; an
// accepted segment is re-sent with another payload; the resource's answer
// to a committed write is lost (MUTATION_UNKNOWN, resolved by operation ID
// against the receipts, decided by client.Unknown.Judge as
// client.Resolver decides); gate and client clocks are skewed
// and drift within the bound; two parties are partitioned; a worker
// crashes and restarts from its journal with the same request ID; the
// registry's store is restored from a snapshot taken before any grant or
// at the first one, reusing the revisions written since or keeping them
// growing, and in half those rounds under two registry replicas of which
// one keeps running with its record cache (fence regression: the
// re-issued fence must never be accepted after an equal or higher one;
// when the gate answers FENCE_REGRESSION and pauses, an operator raises
// the registry's floor and resumes; no replica may commit over the
// restored record what it cached before); an owner lets its lease go without waiting for its last
// write's answer, and that write reaches the gate only after the next
// owner wrote, its proof still fresh (the late copy that must never pause
// the resource); the gate's clock lags the registry's near the edge of the
// bound. Grants come in both forms: a registry replica issues a fresh
// grant as its own HELD statement (lockGrant.v1 heldUntil, no status
// until the first renewal), or, one replica in four, in the earlier form
// with a separate status (registry.Config.SeparateStatus), so a round
// with two replicas, or a restarted one, mixes them as a rollout does.
// A share of the accepted writes hand a job to a downstream worker
// in the same step (the transactional outbox); the job travels the
// network like any message — late, duplicated, lost — and is applied at
// its target through the adapter's ApplyJob (gate.DecideJob). The
// adversary
// taps the network and injects envelopes sent under the owner's identity:
// a forged huge fence, a tampered grant, a replay on another resource, a
// grant under a revoked epoch signed with that epoch's real key, grants
// signed by an unknown or a retired key, another grant's status proof, and
// an expired status proof.
//
// # Every setting, not one
//
// A proof at one comfortable setting says nothing about the others
// (issue 42: every simulated lease had a 3 s TTL, and a 2 s lease that
// never renewed went unseen). Each acquire draws its TTL from the whole
// range the registry accepts (2 s to 10 min), log-uniformly, with the
// ends and the edges between the worker's margins drawn a third of the
// time: the client's shortest TTL for those margins (client.TTLMin),
// where its calls stop being a quarter of the local life, where the
// status proof stops being capped by the expiry (proof life + skew
// bound), the 3 s of before and the registry's default. A TTL below the
// worker's minimum is refused by the client's own rule
// (core.Limits.CheckTTL) before anything is sent, counted, and drawn
// again. Each worker draws its client options (settings.go): renew
// fraction and jitter up to RenewFraction × (1 + RenewJitter) = 3/4,
// call timeout 50–300 ms, expiry and drain margins from the skew bound
// to 3 s, proof margin 10 ms – 1 s, refresh lead, query interval; each
// round the registry's status-proof life (1.5–10 s); clock skew within
// the bound is FaultSkew's. Faults scale with the drawn TTL: a pause
// lasts the lease's TTL and 0.5–8 s more, a long hold 2–5 TTLs (at most
// a minute). The report shows the TTLs drawn by band.
//
// # Ground truth and the checker
//
// The checker learns leases only from what the registry committed (the
// store's commit hook) judged by the registry's clock, and the resource's
// history only from the gate's decisions. It counts stale writes accepted
// (the writer's grant was not a live holder at the acceptance instant, or
// a higher fence had already been accepted), adversarial envelopes
// accepted, rejections that changed highestFence, segments accepted out of
// contract order, regressed grants accepted after an equal or higher fence,
// protected-mutation coverage (applied writes that passed authentication
// and the fence check, over all applied writes), handoff latency (lease
// end → next holder HELD, and → its first accepted write), and the time to
// resolve OWNERSHIP_UNKNOWN and MUTATION_UNKNOWN, all in simulated time.
// The handoff budget times the protocol, not outages: a handoff during
// which a partition cut the next holder from the registry, or after a
// restore, is reported apart and not budgeted (with long leases the
// resource waits for a holder that cannot hear of its grant, or for the
// restored record's holder, as it would in production).
//
// Availability is counted as strictly, each required to be 0: spurious
// pauses (the resource paused while the registry never went backwards),
// blocked handoffs (the newest holder's first write refused by the fence
// checks or a pause while the registry never went backwards), ghost
// waiters (a queued ticket of a request that already had an answer),
// unusable grants (a grant that arrived with the worker's local deadline
// already passed although the lease, counted from when the answered
// request reached the registry, had more than the expiry margin left:
// time the client's own rule threw away, not the network; the long-hold
// fault makes waiters queue past their TTL), leases held past their
// local deadline (a probe a few ms after each local deadline, once the
// driver's own timer on it had its turn, finds the lease's state or what
// it reports a reader — core.LeaseView.CertainAt, what Lease.State and Ctx
// say — still HELD or RENEWING), effects started past the local deadline
// (a worker starting its next segment because the lease said it could,
// after the deadline), and regressions not alarmed (a re-issued grant that gave the gate proof of
// the regression — by the gate's own definitions, through its exported
// gate.StatusEvidence — and no alarm of either kind). Downstream, stale
// effects (a job applied after a job of a higher fence at its target) and
// duplicate effects (one job applied twice) must be 0 too.
//
// A store restored from an old snapshot forgets a grant without ending it.
// The checker keeps such a grant live until its committed expiry, because
// the registry never decided otherwise, and judges overlapping grants by
// their fences. "The registry went backwards", which excuses a pause, is
// any of three things the checker sees happen: a grant issued at or below
// a fence issued before (a regressed grant); a HELD statement (an
// acquire's, renewal's or status answer) about a grant that a higher fence
// had superseded or a commit had ended (a revived grant: a restore lost
// its release and the next grant, and its holder, asking again with its
// journalled request ID, got it back); and a lease expired before the
// expiry the registry had committed (a forgotten renewal; the grant stays
// live until the committed expiry). TestRestoredRegistryGoingBackwardsIs
// NotTheGatesFault replays a round of each of the last two.
//
// A restore also forgets which requests were answered. A late copy of an
// acquire whose client already had its grant then reaches the restored
// registry, which cannot tell it from a retry, and is granted afresh to
// a request nobody waits on any more: the lease holds the resource to
// its TTL (up to 10 minutes) with no holder. A MUTATION_UNKNOWN
// reconcile waiting behind such a grant at the round's end is reported
// apart and not budgeted, as one resolved after a restore is; one behind
// any other holder (a worker received its grant, its request was never
// granted before, or it is the restored record's own) fails the round.
// TestReconcileBehindAGrantTheRestoreIssuedToNobody scripts the
// schedule seed 20261205 reached in round 18382, with those rows.
//
// # The safety boundary, and clocks beyond it
//
// Two different properties are at stake, and only one depends on clocks.
//
// Fence order: no write under fence f is accepted after a write under a
// fence above f was accepted, and no accepted segment skips one. The gate
// guarantees this with no clock at all (highestFence only rises and is
// compared inside the resource's transaction), so it holds whatever the
// skew; any violation is a bug.
//
// Mutual exclusion at the acceptance instant: no write is accepted while
// its grant is not the registry's holder. The gate only knows the grant's
// state through a status proof whose validUntil the registry set at most
// expiry − ClockSkewMaxMs, and accepts it while gateNow + StatusSkewMax <
// validUntil. That implies "still the holder" only if the gate's clock
// lags the registry's by less than the bound. With --skew-beyond-bound,
// half the rounds give the gate a clock 1.5–5 s slow: a paused owner's
// expired proof then looks fresh, and its write lands after its lease
// expired but before the next holder's first write (never after it: the
// fence stops that). The simulator reports these as "slipped beyond the
// bound", and detects the lag itself: a status proof issued further in the
// gate's future than the bound is proof the gate's clock is behind. A slip
// in a round where nothing detected the lag is a violation; detected slips
// are reported, never silently accepted. The gate should carry that check
// (see the report accompanying this package). With StatusQuery the gate
// asks the registry for the grant's state at each decision instead of
// trusting the proof, no gate clock is involved, and the slips go to zero
// (TestStatusQueryClosesTheClockGap).
//
// # What the simulator found in the gate
//
// A registry restored from an old snapshot re-issues fences the gate has
// seen. The gate used to quarantine a re-issued grant's segment that
// collided with the original grant's receipt (refused, but with no
// FENCE_REGRESSION alarm or pause; RegressionNotAlarmed counts such
// rounds), and, when the same client retried its journalled request ID and
// got the same fence and operation root under a new grant, to answer
// REPLAYED and then ACCEPTED. The gate now treats a receipt of another
// grant at the same fence, or another grant at highestFence, as evidence:
// proven HELD it is FENCE_REGRESSION, otherwise the status rejection.
// The simulator's workers still refuse to resume an operation under a
// different grant (ClientSawForgottenRequest counts them); NaiveRecovery
// turns that off to show the gate alone holds
// (TestGateRefusesReissuedGrantSameFenceAndRoot).
//
// A status proof outlives a release: the registry frees the resource at
// once (lock-delay follows only an expiry) while proofs it issued for the
// released lease stay valid until their validUntil. A copy of a write
// whose answer was lost or not final (SEGMENT_GAP, RESOURCE_PAUSED) and is
// still in the network can then be accepted after the release, when its
// grant is not the holder, and before the next holder's first write,
// which the fence cannot order. The client's Release drains: it sends the
// release only once no unsettled envelope's proof can be accepted (the
// formula is core.LeaseView.DrainUntil, the only one); NaiveRelease
// turns that off and the checker counts the resulting stale writes.
//
// A late copy whose proof is still fresh once the next owner has written
// used to be FENCE_REGRESSION and paused the resource: a proof says HELD
// at its issue time, not "still the newest". The gate's regression rule
// now compares issue times (gate/regression.go); --break old-rule brings
// the old rule back and the checker counts its spurious pauses and
// blocked handoffs. Two calls of one request ID (a duplicated acquire)
// used to move their ticket's deadline back and forth forever; a retry
// now only moves it later.
//
// # Negative controls
//
// A negative control (Config.Negative) turns one protection off on
// purpose, built from product parts, never by editing them, and never
// linked into the fencegate binary: package sim/negative builds each one
// and fills in the hooks of Negative (breaks.go), and sim/cmd/simbreak
// runs them. lease-only (--unsafe) runs the resources in shadow mode,
// applying whatever a writer that believes it holds the lease sends;
// auth trusts every key; pollute, segments, regression, old-rule and
// no-alarm replace gate.Decide through gate/gatebreak.Replace by a
// wrapper that doctors its input or output: a rejection that raises
// highestFence, segment order ignored, a regressed holder let through,
// the old regression rule, regressions refused without an alarm; hop
// makes the downstream worker apply every job it is handed, with no gate
// at the target; first-send counts a lease from its acquire's first
// send; content-compare puts a wrapper between the registry and its
// store that drops what each write was decided on (RecordWas,
// SettingsWas), so after a restore that reuses revisions a replica that
// kept its cache commits over the restored record (replicas.go), and the
// checker counts the updates those commits lose; lease-clock runs the
// lease clock as it was before issue 42, from outside the client's core
// (renewals at a share of the TTL, no look at the deadline while a call
// is in flight, the state as last stepped, no TTL refused). The lock-set
// rounds (lockset.go) have their own: set-split, a store that commits a
// set's write member by member; multilock, workers that take a set's
// members one by one with plain acquires in their naming order (the
// peers' MultiLock); no-poll, waiters stepped only on their members'
// commits, never at their WakeAt; with fence and stale-read. The
// read/write lock rounds (rwlock.go) have read-grant (the gate's
// READ_GRANT check off), two-step-downgrade, forget-downgrade, no-hold-back,
// shared-read-lease, readers-first (stores rewriting every record they
// commit) and no-wake, with fence, stale-read and no-poll. Each must
// make its checker count non-zero, or the checker proves nothing
// (sim/negative's TestBrokenProtectionIsCaught,
// TestLeaseClockBreakIsCaughtAtShortTTLs, TestSemaphoreBreaksAreCaught,
// TestLockSetBreaksAreCaught and TestRWLockBreaksAreCaught).
//
// # What is real and what is simulated
//
// Real: the registry and its waiters (stepped by the event queue through
// registry.Acquisition instead of Acquire's goroutine), the client's
// core.Acquire and core.Lease (driven by the workers, which feed them
// their answers and carry their calls over the simulated network and their timers on each worker's own
// clock, as client.Session and client.Lease do with a Transport and real
// timers), the gate adapter and its decision, the signatures. Simulated:
// time (per-party clocks with offset and drift), the network (delay,
// loss, duplication, partitions), scheduling (one event at a time), and
// storage, which is in memory: the registry's store is registry/memstore,
// the product's memory store, which passes the same conformance suite as
// the etcd store (testkit/storetest) and offers what a simulator needs
// as documented contracts: an image of its state, a restore that reuses
// or bumps the revisions, and a commit hook that tells the checker every
// committed record. The application around the cores — which segment to
// send, what to do after each answer, a journal that survives a crash —
// is the workers' own, as it would be any service's.
package sim
