"""A held lease and the shell that keeps it (client/lease.go, lease_drive.go).

Every decision is the LeaseCore's; the shell owns the clock, the HTTP
calls, one background thread and the lock. The thread asks the core what
is due, makes the one call it names in a thread of its own, and waits on
whichever comes first: the call's answer, its timeout, or the instant the
core names — the local deadline itself while a call is in flight, so a
renewal that hangs never keeps ownership certain past the deadline.

A lease can be lost at any moment without the client knowing (a pause, a
partition). ``state`` and ``lost`` say what the client knows; the gate's
fence check is what keeps a stale write out.
"""

import threading

from .core import machine
from .core.lease import (CALL_REFRESH, CALL_RELEASE, Answer, BuildEnvelope, Forget, LeaseCore, Lost, Release,
                         Settle)
from .errors import GateRejection, NotCertain, OutcomeUnknown, ProofStale, Replayed
from .grant import payload_digest as digest_of_payload

SECOND = 1_000_000_000


class LostEvent(threading.Event):
    """Set the moment ownership stops being certain: OWNERSHIP_UNKNOWN,
    EXPIRED, RELEASED, a release begun, or the local deadline reached. It
    is never cleared: when the registry confirms the same grant HELD again,
    the lease issues a new one (``Lease.lost`` returns the current one),
    so work bound to an old one stays stopped. ``is_set`` and ``wait`` look
    at the lease's clock themselves: no reader ever sees it unset at or
    after the local deadline, however late the lease's own timer runs."""

    def __init__(self, lease):
        super().__init__()
        self._lease = lease

    def is_set(self):
        """Whether ownership stopped being certain (see the class)."""
        return super().is_set() or self._lease._lapsed(self)

    isSet = is_set

    def wait(self, timeout=None):
        """Wait until set or timeout (seconds) passes; wakes at the local
        deadline by itself. Returns is_set()."""
        clock = self._lease._clock
        end = None if timeout is None else clock.now() + int(timeout * SECOND)
        while not self.is_set():
            now = clock.now()
            step = self._lease._deadline_of(self)
            if end is not None:
                if now >= end:
                    return False
                step = end if step is None else min(step, end)
            super().wait(None if step is None else max(step - now, 0) / SECOND)
        return True


class Lease:
    """One held grant. Use it as a context manager (``with session.lock(...)
    as lease:``): leaving the block releases it, after draining.

    fence: the grant's fence token, the number the gate orders writes by.
    state: HELD, RENEWING, OWNERSHIP_UNKNOWN, EXPIRED or RELEASED; never
      HELD or RENEWING at or after the local deadline.
    lost: a LostEvent set the moment ownership stops being certain.
    done: an Event set when the lease ended (EXPIRED or RELEASED).
    """

    def __init__(self, session, granted, on_ended=None):
        self._session, self._on_ended = session, on_ended
        self._clock, self._t, self._hook = session.clock, session.transport, session.on_transition
        self._cond = threading.Condition()
        self._core = LeaseCore(session.limits, granted, session._jitter)
        self._lost = LostEvent(self)
        self._done = threading.Event()
        self._inflight = None
        self._apply_lock = threading.Lock()
        self._applied = 0
        g = self._core.grant
        self._thread = threading.Thread(target=self._loop, name="fencegate-lease-" + g.lease, daemon=True)
        self._thread.start()

    # --- reads -----------------------------------------------------------------

    @property
    def grant(self):
        """The grant this lease holds (a fencegate.grant.Grant)."""
        return self._core.grant

    @property
    def fence(self):
        """The grant's fence token."""
        return self._core.grant.fence_token

    @property
    def resource(self):
        """The resource the grant is for."""
        return self._core.grant.resource

    @property
    def lease_id(self):
        """The registry's lease ID."""
        return self._core.grant.lease

    @property
    def operation_id(self):
        """The operation the grant's root binds."""
        return self._core.operation

    @property
    def state(self):
        """The local state at the clock's now (core.state_at)."""
        with self._cond:
            return self._core.state_at(self._clock.now())

    @property
    def lost(self):
        """The current LostEvent (see the class)."""
        with self._cond:
            ev = self._lost
        ev.is_set()  # sets it if the deadline passed before the timer ran
        return ev

    @property
    def done(self):
        """Set when the lease ended: EXPIRED or RELEASED."""
        return self._done

    @property
    def deadline(self):
        """The local deadline, in seconds on the session's clock (Unix
        time, kept by the monotonic clock): no new effects at or after it
        unless a renewal is confirmed first."""
        with self._cond:
            return self._core.sched.deadline / SECOND

    @property
    def releasing(self):
        """Whether a release began."""
        with self._cond:
            return self._core.releasing

    @property
    def unsettled(self):
        """How many envelopes await a final answer: what a release drains for."""
        with self._cond:
            return len(self._core.unsettled)

    def _lapsed(self, ev):
        """For LostEvent.is_set: ev is the current event and ownership is
        no longer certain at now: set it and wake the loop."""
        with self._cond:
            if ev is not self._lost or self._core.certain_at(self._clock.now()):
                return False
            ev.set()
            self._cond.notify_all()
            return True

    def _deadline_of(self, ev):
        with self._cond:
            if ev is not self._lost:
                return None
            return self._core.sched.deadline

    # --- envelopes ---------------------------------------------------------------

    def envelope(self, seq, payload_digest):
        """The envelope (its JSON text, docs/api.md "The gate's envelope")
        for segment seq (1 for the first) of the lease's operation, with
        payload_digest ("sha256:<hex>" of what the write stores; see
        fencegate.payload_digest). Raises NotCertain unless ownership is
        certain and the local deadline is ahead, ProofStale while the
        status proof is being refreshed (ask again). The envelope counts as
        unsettled until settle() with a final answer: a release waits for
        its proof to lapse."""
        r = self._step(BuildEnvelope(seq, payload_digest))
        if r.err is not None:
            if isinstance(r.err, ProofStale) or isinstance(r.err, NotCertain) and r.err.reason == "local deadline passed":
                with self._cond:
                    self._cond.notify_all()  # the loop steps the deadline and queries, or refreshes
            raise r.err
        return r.envelope

    def settle(self, seq, outcome):
        """Record the resource's answer (an outcome code) to segment seq: a
        final one lets a release skip the wait for its proof. Never settle
        a write whose answer was lost."""
        self._step(Settle(seq, outcome))

    def send(self, payload, write):
        """Write under the lease, one call (client.Send in Go): build the
        envelope of the lease's next segment (1, 2, … as writes are
        accepted) with payload's digest, call write(envelope, digest), and
        settle its answer. write returns normally when the resource
        accepted, raises a GateRejection for a refusal, or anything else
        when the answer was lost: send then raises OutcomeUnknown and
        leaves the envelope unsettled. An exception wrapped in RolledBack
        means nothing left the process: the envelope is forgotten and the
        wrapped exception raised. Returns what write returned."""
        with self._apply_lock:
            seq = self._applied + 1
            digest = digest_of_payload(payload)
            env = self.envelope(seq, digest)
            try:
                out = write(env, digest)
            except RolledBack as rb:
                self._step(Forget(seq))
                raise rb.error
            except GateRejection as rej:
                self.settle(seq, rej.outcome)
                if isinstance(rej, Replayed):
                    self._applied = seq
                raise
            except OutcomeUnknown:
                raise
            except Exception as e:
                raise OutcomeUnknown("fencegate: write segment %d of %s: outcome unknown: %s"
                                     % (seq, self.lease_id, e)) from e
            self.settle(seq, "ACCEPTED")
            self._applied = seq
            return out

    # --- release -------------------------------------------------------------------

    def release(self, drain=True, timeout=None):
        """Give the lease up: ownership stops being certain at once (lost is
        set, envelopes are refused) and the release is sent once no
        unsettled envelope's proof can still be accepted (with drain; a
        status proof outlives a release). A lost release answer is retried.
        Returns True once the lease ended, False if timeout (seconds) passed
        first; the lease keeps trying in the background."""
        self._step(Release(drain))
        return self._done.wait(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._step(Release(True))
        with self._cond:
            wait = max(self._core.release_at - self._clock.now(), 0) + self._core.ttl()
        # After the drain and one TTL the registry has ended the lease
        # whether or not the release got through: no renewal was sent since
        # the release began.
        self._done.wait(wait / SECOND)
        return False

    # --- the shell -------------------------------------------------------------------

    def _step(self, inp):
        with self._cond:
            r = self._core.step(self._clock.now(), inp)
            notes = self._sync(r.transitions)
            self._cond.notify_all()
        self._notify(notes)
        return r

    def _sync(self, transitions):
        """Apply what the core did: lost follows certain_at (set when it
        turns false, a new one when it turns true again), done when the
        lease ends. Returns the hook notes to run outside the lock."""
        certain, live = self._core.certain_at(self._clock.now()), not threading.Event.is_set(self._lost)
        if live and not certain:
            self._lost.set()
        elif not live and certain:
            self._lost = LostEvent(self)
        ended = machine.terminal(self._core.state) and not self._done.is_set()
        if ended:
            self._done.set()
        return transitions, ended

    def _notify(self, notes):
        transitions, ended = notes
        if ended and self._on_ended is not None:
            self._on_ended(self)
        if self._hook is not None:
            for t in transitions:
                self._hook(self.lease_id, t.frm, t.to, t.event)

    def _loop(self):
        while True:
            with self._cond:
                now = self._clock.now()
                r = self._core.next(now)
                notes = self._sync(r.transitions)
                if r.call is not None:
                    self._inflight = r.call
                    threading.Thread(target=self._perform, args=(r.call,), daemon=True,
                                     name="fencegate-call-" + r.call.kind).start()
                wake = r.wake
                if self._inflight is not None:
                    expiry = self._inflight.sent + self._inflight.timeout
                    if now >= expiry:
                        lost, self._inflight = self._inflight, None
                        r = self._core.step(now, Lost(lost))
                        notes = (notes[0] + r.transitions, notes[1])
                        wake = now
                    else:
                        wake = expiry if wake is None else min(wake, expiry)
                ended = machine.terminal(self._core.state)
                if not ended and not notes[0] and r.call is None:
                    self._cond.wait(None if wake is None else max(wake - now, 0) / SECOND)
            self._notify(notes)
            if ended:
                return

    def _perform(self, call):
        """Make one call the core asked for and step its answer."""
        g, timeout = call.grant, call.timeout / SECOND
        issued, err = None, None
        try:
            if call.kind == CALL_REFRESH:
                issued = self._t.status(g, timeout)
            elif call.kind == CALL_RELEASE:
                self._t.release(g, timeout)
            else:
                issued = self._t.renew(g, timeout)
        except Exception as e:  # classified by the core: refused, retry or lost
            err = e
        with self._cond:
            if self._inflight is call:
                self._inflight = None
            r = self._core.step(self._clock.now(), Answer(call, issued, err))
            notes = self._sync(r.transitions)
            self._cond.notify_all()
        self._notify(notes)


class RolledBack(Exception):
    """Raised by a write function of Lease.send: the write was rolled back
    in the worker's own transaction and its envelope never left the
    process; ``error`` is the cause, which send raises."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error
