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
import time

from .core import machine
from .core.lease import (CALL_REFRESH, CALL_RELEASE, Answer, BuildEnvelope, Forget, LeaseCore, Lost, Release,
                         Settle, set_name)
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

    def __init__(self, shell):
        super().__init__()
        self._shell = shell

    def is_set(self):
        """Whether ownership stopped being certain (see the class)."""
        return super().is_set() or self._shell._lapsed(self)

    isSet = is_set

    def wait(self, timeout=None):
        """Wait until set or timeout (seconds) passes; wakes at the local
        deadline by itself. Returns is_set()."""
        clock = self._shell._clock
        end = None if timeout is None else clock.now() + int(timeout * SECOND)
        while not self.is_set():
            now = clock.now()
            step = self._shell._deadline_of(self)
            if end is not None:
                if now >= end:
                    return False
                step = end if step is None else min(step, end)
            super().wait(None if step is None else max(step - now, 0) / SECOND)
        return True


class _Shell:
    """What a lease's handles share: one core, one background thread, one
    lock, one LostEvent and one done event. A plain lease has one handle;
    a lock set has one per member, all over the same shell, so the set is
    one state machine (client/lease.go's shell)."""

    def __init__(self, session, granted, on_ended):
        self._session, self._on_ended = session, on_ended
        self._clock, self._t, self._hook = session.clock, session.transport, session.on_transition
        self._cond = threading.Condition()
        self._core = LeaseCore(session.limits, granted, session._jitter)
        self._lost = LostEvent(self)
        self._done = threading.Event()
        self._ending = False        # the core ended: done is set once on_ended ran
        self._inflight = None
        self._paused = False        # Session.downgrade: no call starts meanwhile
        self._leftovers_released = False
        gs = self._core.set_grants()
        self.name = self._core.grant.lease if gs is None else set_name([g.resource for g in gs])
        self.handles = [Lease(self, i) for i in range(len(gs) if gs else 1)]
        self._thread = threading.Thread(target=self._loop, name="fencegate-lease-" + self.name, daemon=True)
        self._thread.start()

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
        lease ends (by _notify, once the session forgot the lease). Returns
        the hook notes to run outside the lock."""
        certain, live = self._core.certain_at(self._clock.now()), not threading.Event.is_set(self._lost)
        if live and not certain:
            self._lost.set()
        elif not live and certain:
            self._lost = LostEvent(self)
        ended = machine.terminal(self._core.state) and not self._ending
        if ended:
            self._ending = True
        return transitions, ended

    def _notify(self, notes):
        transitions, ended = notes
        if ended:
            # The session forgets the lease before done is set: whoever
            # waits for the end (release) may take the resource again at once.
            if self._on_ended is not None:
                self._on_ended(self)
            self._done.set()
        if self._hook is not None:
            for t in transitions:
                self._hook(self.name, t.frm, t.to, t.event)

    def _pause(self):
        """Start no call until _resume, and wait for the one in flight (Session.downgrade)."""
        with self._cond:
            self._paused = True
            while self._inflight is not None:
                self._cond.wait()

    def _resume(self):
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def _loop(self):
        while True:
            with self._cond:
                while self._paused:
                    self._cond.wait()
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
                        self._cond.notify_all()
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
        """Make one call the core asked for and step its answer (a lock
        set's: one set call, or a status query per member)."""
        g, timeout = call.grant, call.timeout / SECOND
        issued, err, answers = None, None, None
        try:
            if call.set is not None:
                if call.kind == CALL_REFRESH:
                    answers = [self._t.status(m, timeout) for m in call.set]
                elif call.kind == CALL_RELEASE:
                    self._t.release_set(call.set, timeout)
                else:
                    answers = self._t.renew_set(call.set, timeout)
                issued = answers[0] if answers else None
            elif call.kind == CALL_REFRESH:
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
            r = self._core.step(self._clock.now(), Answer(call, issued, err, answers))
            notes = self._sync(r.transitions)
            self._cond.notify_all()
        self._notify(notes)

    def release(self, drain, timeout):
        """Lease.release for every handle: then, once the shell ended, the
        leftovers of a lock set that ended EXPIRED."""
        self._step(Release(drain))
        if not self._done.wait(timeout):
            return False
        self._release_leftovers()
        return True

    def _release_leftovers(self):
        """Release, once, what a lock set that ended EXPIRED may still hold
        (core.leftovers), each member by an ordinary release at the
        drain's end, so that the other members' resources need not wait
        out their TTL. A refusal (the member already ended) is as good as
        a release; a lost answer leaves the member to end at its TTL."""
        with self._cond:
            left = self._core.leftovers()
            if left is None or self._leftovers_released:
                return
            self._leftovers_released = True
            timeout = self._session.limits.lease_call_timeout(self._core.ttl()) / SECOND
        grants, at = left
        wait = at - self._clock.now()
        if wait > 0:
            time.sleep(wait / SECOND)
        for g in grants:
            try:
                self._t.release(g, timeout)
            except Exception:  # refused: already ended; lost: it ends at its TTL
                pass


class Lease:
    """One held grant. Use it as a context manager (``with session.lock(...)
    as lease:``): leaving the block releases it, after draining.

    fence: the grant's fence token, the number the gate orders writes by.
    state: HELD, RENEWING, OWNERSHIP_UNKNOWN, EXPIRED or RELEASED; never
      HELD or RENEWING at or after the local deadline.
    lost: a LostEvent set the moment ownership stops being certain.
    done: an Event set when the lease ended (EXPIRED or RELEASED).

    A member of a lock set (LockSet.lease) is a Lease too: its grant,
    fence, resource, envelopes, settle and send are the member's (for the
    member's own gate); its state, lost, done, deadline and release are
    the whole set's.
    """

    def __init__(self, shell, member=0):
        self._sh, self._member = shell, member
        self._apply_lock = threading.Lock()
        self._applied = 0

    # --- reads -----------------------------------------------------------------

    @property
    def _issued(self):
        with self._sh._cond:
            return self._sh._core.member(self._member)

    @property
    def grant(self):
        """The grant this lease holds (a fencegate.grant.Grant)."""
        return self._issued.grant

    @property
    def fence(self):
        """The grant's fence token."""
        return self.grant.fence_token

    @property
    def resource(self):
        """The resource the grant is for (a semaphore's slot, a reader's NAME/_read)."""
        return self.grant.resource

    @property
    def lease_id(self):
        """The registry's lease ID."""
        return self.grant.lease

    @property
    def operation_id(self):
        """The operation the grant's root binds."""
        return self._sh._core.operation

    @property
    def state(self):
        """The local state at the clock's now (core.state_at)."""
        with self._sh._cond:
            return self._sh._core.state_at(self._sh._clock.now())

    @property
    def lost(self):
        """The current LostEvent (see the class)."""
        with self._sh._cond:
            ev = self._sh._lost
        ev.is_set()  # sets it if the deadline passed before the timer ran
        return ev

    @property
    def done(self):
        """Set when the lease ended: EXPIRED or RELEASED."""
        return self._sh._done

    @property
    def deadline(self):
        """The local deadline, in seconds on the session's clock (Unix
        time, kept by the monotonic clock): no new effects at or after it
        unless a renewal is confirmed first."""
        with self._sh._cond:
            return self._sh._core.sched.deadline / SECOND

    @property
    def releasing(self):
        """Whether a release began."""
        with self._sh._cond:
            return self._sh._core.releasing

    @property
    def unsettled(self):
        """How many envelopes await a final answer (of any member of a set):
        what a release drains for."""
        with self._sh._cond:
            return len(self._sh._core.unsettled)

    # --- envelopes ---------------------------------------------------------------

    def envelope(self, seq, payload_digest):
        """The envelope (its JSON text, docs/api.md "The gate's envelope")
        for segment seq (1 for the first) of the lease's operation, with
        payload_digest ("sha256:<hex>" of what the write stores; see
        fencegate.payload_digest). Raises NotCertain unless ownership is
        certain and the local deadline is ahead (and no downgrade began),
        ProofStale while the status proof is being refreshed (ask again).
        The envelope counts as unsettled until settle() with a final
        answer: a release waits for its proof to lapse."""
        sh = self._sh
        r = sh._step(BuildEnvelope(seq, payload_digest, self._member))
        if r.err is not None:
            if isinstance(r.err, ProofStale) or isinstance(r.err, NotCertain) and r.err.reason == "local deadline passed":
                with sh._cond:
                    sh._cond.notify_all()  # the loop steps the deadline and queries, or refreshes
            raise r.err
        return r.envelope

    def settle(self, seq, outcome):
        """Record the resource's answer (an outcome code) to segment seq: a
        final one lets a release skip the wait for its proof. Never settle
        a write whose answer was lost."""
        self._sh._step(Settle(seq, outcome, self._member))

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
                self._sh._step(Forget(seq, self._member))
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
        first; the lease keeps trying in the background. A member's release
        releases the whole set (one registry call); a set that ended
        EXPIRED (a member lost) releases its other members here, each by an
        ordinary release once the drain is over, so their resources need
        not wait out the TTL."""
        return self._sh.release(drain, timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        sh = self._sh
        sh._step(Release(True))
        with sh._cond:
            wait = max(sh._core.release_at - sh._clock.now(), 0) + sh._core.ttl()
        # After the drain and one TTL the registry has ended the lease
        # whether or not the release got through: no renewal was sent since
        # the release began.
        if sh._done.wait(wait / SECOND):
            sh._release_leftovers()
        return False


class LockSet:
    """A held lock set (Session.lock_set, acquire_set): every member's
    grant, held as ONE lease — one state machine, one renewal loop renewing
    every member in one registry call, one local deadline, one lost event.
    The moment any member stops being certain (its renewal lost, the
    registry's word that it ended: a break, an expiry) the whole set is:
    lost is set and every member's envelopes are refused. The client never
    keeps part of a set.

    Each member keeps its own grant and fence for its own gate:
    lease(member) is that member's Lease (its grant, fence, envelope,
    settle and send are the member's; fencegate.pg.apply takes it). Use the
    set as a context manager: leaving the block releases every member."""

    def __init__(self, shell, request_id):
        self._sh, self.request_id = shell, request_id

    @property
    def members(self):
        """The set's resources, sorted (its member order)."""
        return [h.resource for h in self._sh.handles]

    def lease(self, member):
        """member's Lease (KeyError for a resource not in the set)."""
        for h in self._sh.handles:
            if h.resource == member:
                return h
        raise KeyError("fencegate: lock set %s has no member %r" % (self._sh.name, member))

    @property
    def leases(self):
        """Every member's Lease, in member order."""
        return list(self._sh.handles)

    @property
    def operation_id(self):
        """The operation every member's root binds."""
        return self._sh.handles[0].operation_id

    state = property(lambda self: self._sh.handles[0].state, doc="The set's local state: one machine for all.")
    lost = property(lambda self: self._sh.handles[0].lost, doc="The set's LostEvent (Lease.lost).")
    done = property(lambda self: self._sh._done, doc="Set when the set ended: EXPIRED or RELEASED.")
    deadline = property(lambda self: self._sh.handles[0].deadline, doc="The set's local deadline (Lease.deadline).")
    unsettled = property(lambda self: self._sh.handles[0].unsettled, doc="Unsettled envelopes of any member.")

    def release(self, drain=True, timeout=None):
        """Give every member up in one registry call, after the drain
        (Lease.release); a set that ended EXPIRED releases its other
        members one by one."""
        return self._sh.release(drain, timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._sh.handles[0].__exit__(*exc)


class RolledBack(Exception):
    """Raised by a write function of Lease.send: the write was rolled back
    in the worker's own transaction and its envelope never left the
    process; ``error`` is the cause, which send raises."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error
