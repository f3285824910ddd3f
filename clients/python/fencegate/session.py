"""One workload identity's client (client/session.go, acquire.go).

A Session acquires leases and guarantees that, per resource, it never runs
two identities at once: at most one live lease, and at most one request ID
without a final answer. Every decision about an acquire is the
AcquireCore's; the session drives it with HTTP and the clock.
"""

import queue
import random
import secrets
import threading
import time

from .core import downgrade as core_downgrade
from .core.acquire import AcquireCore
from .core.lease import CALL_QUERY_REQUEST, Answer, Downgrading, Granted, Lost, Release, set_name
from .errors import AcquirePending, AlreadyHeld, FencegateError, InvalidRequestError, OutcomeUnknown
from .grant import validate_resource
from .lease import LockSet, _Shell
from .options import Options, ns
from .transport import Transport

SECOND = 1_000_000_000
MS = 1_000_000

LOCK_SET_MEMBERS_MIN = 2
"""A lock set has at least this many members (wire.LockSetMembersMin)."""
LOCK_SET_MEMBERS_MAX = 16
"""A lock set has at most this many members (wire.LockSetMembersMax)."""
READ_SEGMENT = core_downgrade.READ_SEGMENT
"""The last segment of a reader's resource: NAME/_read (wire.ReadSegment)."""
MODE_READ = "read"
"""An acquire's mode for a reader's lease on a read/write lock (wire.ModeRead)."""
DOWNGRADE_RETRY_WAIT = core_downgrade.DOWNGRADE_RETRY_WAIT
"""The pause between two sends of a downgrade whose answer was lost (the
same request ID: the registry answers a retry with the grant it made;
the downgrade's core, fencegate.core.downgrade, decides)."""

OPERATION_CLASS_DEFAULT = "default"
"""An acquire's operation class when the caller names none."""


class Timeout(FencegateError, TimeoutError):
    """The caller's time ran out before the acquire had a final answer. The
    request ID stays pending: it may still be granted, so a later acquire
    with the same parameters continues it (request_id)."""

    def __init__(self, message, request_id):
        super().__init__(message)
        self.request_id = request_id


class Clock:
    """The client's clock, in integer nanoseconds: time.monotonic_ns(),
    anchored once to the wall clock, so that local deadlines never jump
    with the wall clock and the registry's instants (a status proof's
    validUntil) compare with it within the skew bound."""

    def __init__(self):
        self._base = time.time_ns() - time.monotonic_ns()

    def now(self):
        """Now, in nanoseconds since the Unix epoch (monotonic)."""
        return self._base + time.monotonic_ns()


class _Attempt:
    """An acquire whose request ID is kept until a final answer (a lock
    set's: members, sorted; req names it by set_name)."""

    def __init__(self, req, core, members=None):
        self.req, self.core, self.active, self.members = req, core, True, members


class Session:
    """A client of the registry at url, as the identity token names
    (``Authorization: Bearer``; `fencegate serve --dev`'s token is
    fencegate-dev-token), or the client certificate of ssl_context over
    https. options: an Options (its defaults: the Go SDK's).
    on_transition(lease_or_request_id, from, to, event), if set, is called
    after every state transition, without locks held. Safe for concurrent
    use."""

    def __init__(self, url, token=None, options=None, ssl_context=None, on_transition=None, transport=None):
        self.options = options or Options()
        self.options.validate()
        self.limits = self.options.limits()
        self.transport = transport or Transport(url, token, ssl_context)
        self.clock = Clock()
        self.on_transition = on_transition
        self._rand = random.Random(secrets.randbits(128))
        self._mu = threading.Lock()
        self._pending = {}  # resource → _Attempt
        self._live = {}     # resource → Lease

    # --- the session's numbers ------------------------------------------------

    def _jitter(self):
        with self._mu:
            return self._rand.random() * 2 - 1

    @staticmethod
    def new_request_id():
        """A fresh request ID: "req-" and 32 hex digits from the OS's random source."""
        return "req-" + secrets.token_hex(16)

    def pending(self, resource):
        """The request ID of the resource's acquire without a final answer, or None."""
        with self._mu:
            a = self._pending.get(resource)
            return a.core.request["requestId"] if a else None

    def lease(self, resource):
        """The resource's live lease, or None."""
        with self._mu:
            return self._live.get(resource)

    # --- acquiring --------------------------------------------------------------

    def acquire(self, resource, ttl=None, wait=0, operation_id=None, operation_class=OPERATION_CLASS_DEFAULT,
                timeout=None, permits=0, mode=""):
        """Acquire a lease on resource and return it HELD. ttl (seconds,
        default options.ttl_default) is the server-side TTL; wait (seconds)
        how long to queue behind other holders (0: BusyError at once).

        With permits N (1 to 64; wire.AcquireRequest.Permits), resource is
        a counting semaphore of N permits: the lease is one permit, a grant
        on one of its slots (lease.resource is the slot, resource + "/_slot."
        + I, with its own fence: what a gate keys on). The session keeps it
        under the semaphore's name (session.lease(resource)), one permit per
        semaphore and session at a time. Every acquire of a name must give
        the same N, and a plain lock's name takes none
        (PermitsMismatchError); N out of range is InvalidRequestError.

        The request ID is kept until the registry gives a final answer:
        after a lost answer the client asks for the grant by the same ID
        (GET /v1/requests/{id}) and, if none exists yet, sends the same
        acquire again; it never switches IDs while the old attempt could
        still be granted. A definite refusal (BusyError, WaitTimeoutError,
        TTLOutOfRangeError, …) is final and raised. A TTL shorter than the
        margins allow is refused before anything is sent (TTLSettingsError,
        naming the shortest that works). timeout (seconds, None: none)
        bounds the whole call: Timeout, the request ID kept.

        With mode "read" (docs/api.md, "Read/write locks"), resource is a
        read/write lock and the lease is a reader's: readers share, a
        writer (mode "", the exclusive lease) excludes; a queued writer
        holds back readers behind it. The reader's grant is on
        resource + "/_read" (lease.resource) with the fence of the last
        writer it saw: it never opens the lock's gate for a write (the gate
        answers ReadGrant). The session keeps it under resource."""
        return self._acquire(self._request(resource, ttl, ns(wait) // MS, operation_id, operation_class, permits,
                                           mode), timeout, False)

    def lock(self, resource, ttl=None, operation_id=None, operation_class=OPERATION_CLASS_DEFAULT, timeout=None,
             permits=0, mode=""):
        """Acquire resource, waiting for it as long as timeout (seconds;
        None: no end) allows, in FIFO order: it queues at the registry in
        long polls of at most options.lock_wait_chunk, each asking again
        with the same request ID, so the waiter keeps its place in the
        queue. Returns the Lease HELD; use it as a context manager to
        release it when the block ends. With a timeout, the queueing ends
        options.call_timeout before it, so the registry's last answer
        (WaitTimeoutError, naming who holds the resource) arrives in time.
        permits: as for acquire (a semaphore's waiters queue FIFO across
        its slots); mode: as for acquire."""
        r = self._request(resource, ttl, ns(self.options.lock_wait_chunk) // MS, operation_id, operation_class, permits,
                          mode)
        return self._acquire(r, timeout, True)

    def _request(self, resource, ttl, wait_ms, operation_id, operation_class, permits, mode=""):
        if ttl is None:
            ttl = self.options.ttl_default  # always explicit: a lost answer is waited out for exactly this
        r = {"resource": resource, "operationId": operation_id or "", "operationClass": operation_class,
             "requestId": "", "ttlMs": ns(ttl) // MS, "waitMs": wait_ms}
        if permits:  # a plain lock sends none (permits 0 is the wire's "no semaphore")
            if not isinstance(permits, int) or isinstance(permits, bool) or permits < 0:
                raise InvalidRequestError("fencegate: acquire: permits %r: want a whole number of permits" % (permits,))
            r["permits"] = permits
        if mode:  # a writer's (exclusive) acquire sends none
            if mode != MODE_READ:
                raise InvalidRequestError("fencegate: acquire: mode %r: \"\" (exclusive, a writer) or %r"
                                          % (mode, MODE_READ))
            r["mode"] = mode
        return r

    # --- lock sets ---------------------------------------------------------------

    def lock_set(self, members, ttl=None, operation_id=None, operation_class=OPERATION_CLASS_DEFAULT, timeout=None):
        """Acquire every resource of members at once (a lock set, docs/api.md
        "Lock sets"), waiting as long as timeout (seconds; None: no end)
        allows, as lock does for one resource: it queues in long polls of
        at most options.lock_wait_chunk with the same request ID, holding
        nothing while it waits (the registry queues the set in every
        member's queue). members may come in any order (the session sorts
        them); whatever order callers name them in, two sets never
        deadlock: the registry grants a set whole, never in part. Returns
        the LockSet HELD: ONE lease for all members (one machine, one
        renewal of every member in one call, one deadline), each member
        with its own grant and fence for its own gate (LockSet.lease)."""
        r, members = self._set_request(members, ttl, ns(self.options.lock_wait_chunk) // MS, operation_id,
                                       operation_class)
        return self._acquire(r, timeout, True, members)

    def acquire_set(self, members, ttl=None, wait=0, operation_id=None, operation_class=OPERATION_CLASS_DEFAULT,
                    timeout=None):
        """lock_set that queues at most wait seconds (0: BusyError at once,
        naming the first busy member, when any member is held)."""
        r, members = self._set_request(members, ttl, ns(wait) // MS, operation_id, operation_class)
        return self._acquire(r, timeout, False, members)

    def _set_request(self, members, ttl, wait_ms, operation_id, operation_class):
        if isinstance(members, str) or not all(isinstance(m, str) for m in members):
            raise InvalidRequestError("fencegate: lock set: members %r: want a list of resource IDs" % (members,))
        members = sorted(members)
        if not LOCK_SET_MEMBERS_MIN <= len(members) <= LOCK_SET_MEMBERS_MAX:
            raise InvalidRequestError("fencegate: lock set: a lock set has %d to %d members, not %d"
                                      % (LOCK_SET_MEMBERS_MIN, LOCK_SET_MEMBERS_MAX, len(members)))
        for i, m in enumerate(members):
            try:
                validate_resource(m)
            except ValueError as e:
                raise InvalidRequestError("fencegate: lock set: members[%d]: %s" % (i, e)) from None
            if i and members[i - 1] == m:
                raise InvalidRequestError("fencegate: lock set: %s named twice" % m)
        r = self._request(set_name(members), ttl, wait_ms, operation_id, operation_class, 0)
        return r, members

    # --- read/write locks ----------------------------------------------------------

    def downgrade(self, lease, timeout=None):
        """Turn lease, this session's write lease on a read/write lock, into
        a reader's lease in one registry write (POST /v1/downgrade): the
        reader's grant names resource + "/_read", with lease's fence, TTL
        and operation, and no queued writer gets in between. From the
        moment downgrade is called lease builds no envelope (NotCertain):
        the registry holds other readers back until every HELD statement of
        lease has expired, on the promise that its holder stopped writing.
        Once the registry answers, lease ends RELEASED and the reader's
        lease is returned HELD, kept under the lock's name
        (session.lease(name)). A lost answer is sent again with the same
        request ID until timeout (seconds; None: no end) passes
        (OutcomeUnknown then: it may have been applied); a definite
        refusal (lease expired, broken, not this owner's) is raised, and
        lease, still refusing envelopes, should be released
        (Session.Downgrade in Go)."""
        sh = lease._sh
        g = lease.grant
        if len(sh.handles) > 1:
            raise InvalidRequestError("fencegate: downgrade %s: a lock set has no readers" % sh.name)
        if g.resource.endswith("/" + READ_SEGMENT):
            raise InvalidRequestError("fencegate: downgrade %s: already a reader's lease" % g.resource)
        sh._step(Downgrading())  # no envelope from here on
        sh._pause()               # no renewal in flight meanwhile: the write lease ends under us
        try:
            granted = self._downgrade_call(
                core_downgrade.DowngradeCore(self.limits, g, lease.operation_id, self.new_request_id()), timeout)
        except BaseException:
            sh._resume()
            raise
        # The registry ended the write lease RELEASED in the same write: it
        # is releasing before its loop runs again (a renewal now would be
        # refused and end it EXPIRED), its release is answered as a
        # repeated one, and it ends here too.
        sh._step(Release(False))
        sh._resume()
        name = g.resource
        reader = _Shell(self, granted, on_ended=lambda shell: self._ended([name], shell)).handles[0]
        sh.release(False, 0)
        with self._mu:
            self._live[name] = reader
        return reader

    def _downgrade_call(self, dc, timeout):
        """Drive dc (the downgrade's core: the same request ID on every
        send) until a definite answer or timeout; return the reader's
        lease to start (a Granted), or raise the refusal or BadAnswer."""
        end = None if timeout is None else self.clock.now() + ns(timeout)
        last = None
        while True:
            r = dc.next(self.clock.now())
            if dc.done:
                if dc.err is not None:
                    raise dc.err
                return dc.granted
            if r.call is None:
                if end is not None and r.wake >= end:
                    raise OutcomeUnknown("fencegate: downgrade %s: no answer (it may have been applied: request "
                                         "%s): %s" % (dc.write.resource, dc.request_id, last)) from last
                time.sleep(max(r.wake - self.clock.now(), 0) / SECOND)
                continue
            call = r.call
            try:
                inp = Answer(call, self.transport.downgrade(call.grant, call.request["requestId"],
                                                            call.timeout / SECOND))
            except Exception as e:  # the core reads it: a definite refusal, or lost
                last = e
                inp = Answer(call, None, e)
            dc.step(self.clock.now(), inp)

    def _acquire(self, r, timeout, locking, members=None):
        deadline = None if timeout is None else self.clock.now() + ns(timeout)
        a = self._begin(r, members)
        if locking:
            with self._mu:
                until = 0 if deadline is None else deadline - self.limits.call_timeout
                a.core.wait_as_lock(ns(self.options.lock_wait_chunk), until)
        while True:
            with self._mu:
                ready = a.core.next(self.clock.now())
            call = ready.call
            if call is None:
                if a.core.done:
                    return self._answered(a)
                if a.core.unreachable is not None:
                    self._finish(a, False)  # the request ID stays pending: it may still be granted
                    raise a.core.unreachable
                self._sleep_until(a, ready.wake, deadline)
                continue
            issued, err, timed_out = self._call(call, deadline)
            if timed_out:
                self._finish(a, False)
                raise Timeout("fencegate: acquire %s: request %s has no final answer: timed out"
                              % (r["resource"], call.request["requestId"]), call.request["requestId"])
            if err is _LOST:
                inp = Lost(call)
            elif call.set_request is not None:  # a set's answer: every member's, in member order
                inp = Answer(call, issued[0] if issued else None, err, issued)
            else:
                inp = Answer(call, issued, err)
            with self._mu:
                done = a.core.step(self.clock.now(), inp)
            self._notify(call.request["requestId"], done.transitions)

    def _call(self, call, deadline):
        """Make call in a thread of its own and wait for its answer at most
        its timeout (and never past deadline): (issued, err, timed_out)."""
        out = queue.Queue(1)
        t = self.transport
        timeout = call.timeout / SECOND

        def perform():
            try:
                if call.kind == CALL_QUERY_REQUEST:
                    out.put((t.query_request(call.request["requestId"], timeout), None))
                elif call.set_request is not None:
                    out.put((t.acquire_set(call.set_request, timeout), None))
                else:
                    out.put((t.acquire(call.request, timeout), None))
            except Exception as e:  # classified by the core
                out.put((None, e))

        threading.Thread(target=perform, daemon=True, name="fencegate-acquire").start()
        wait, cut = call.timeout, False
        if deadline is not None and deadline - self.clock.now() < wait:
            wait, cut = max(deadline - self.clock.now(), 0), True
        try:
            issued, err = out.get(timeout=wait / SECOND)
            return issued, err, False
        except queue.Empty:
            return None, _LOST, cut

    def _sleep_until(self, a, wake, deadline):
        if deadline is not None and (wake is None or wake > deadline):
            time.sleep(max(deadline - self.clock.now(), 0) / SECOND)
            self._finish(a, False)
            rid = a.core.request["requestId"]
            raise Timeout("fencegate: acquire %s: request %s has no final answer: timed out"
                          % (a.req["resource"], rid), rid)
        if wake is not None:
            time.sleep(max(wake - self.clock.now(), 0) / SECOND)

    def _answered(self, a):
        core = a.core
        if core.err is not None:
            self._finish(a, True)
            raise core.err
        # The lease's TTL counts from an instant the registry's own start of
        # the lease cannot precede: after a wait of any length the lease is
        # usable for its whole TTL.
        # A semaphore's permit and a reader's lease are kept under the name
        # asked for, not their grant's resource; a lock set under each member.
        names = a.members if a.members is not None else [a.req["resource"]]
        shell = _Shell(self, Granted(core.issued, a.req["operationId"], core.lease_from(self.clock.now()),
                                     core.issued_set), on_ended=lambda shell: self._ended(names, shell))
        with self._mu:
            if self._pending.get(a.req["resource"]) is a:
                del self._pending[a.req["resource"]]
            for name, h in zip(names, shell.handles):
                self._live[name] = h
        if a.members is not None:
            return LockSet(shell, core.req["requestId"])
        return shell.handles[0]

    def _notify(self, request_id, transitions):
        if self.on_transition is not None:
            for t in transitions:
                self.on_transition(request_id, t.frm, t.to, t.event)

    def _begin(self, r, members=None):
        """Reserve the resource for one acquire: reuse the pending request ID
        when the parameters match; refuse while another attempt or a live
        lease exists. For a lock set, members are its (sorted, valid)
        resources and r names it by set_name: the attempt is kept under
        that name, and refused while any member has a live lease or an
        attempt of its own; a plain acquire is refused while a pending set
        has its resource among its members."""
        if members is None:
            try:
                validate_resource(r["resource"])
            except ValueError as e:
                raise InvalidRequestError("fencegate: acquire: %s" % e) from None
        self.limits.check_ttl(r["ttlMs"] * MS)
        with self._mu:
            res = r["resource"]
            now = self.clock.now()
            self._reserved_unlocked(res, members, now)
            a = self._pending.get(res)
            if a is not None:
                if not r["operationId"]:
                    r["operationId"] = a.req["operationId"]  # left to the session: the pending acquire's
                pe = AcquirePending(res, a.core.request["requestId"], a.core.reusable_at() / SECOND)
                same = {k: v for k, v in a.req.items() if k != "requestId"} == {
                    k: v for k, v in r.items() if k != "requestId"}
                if a.active:
                    raise pe
                if same:
                    a.active = True
                    a.core.restart()
                    return a
                if now < a.core.reusable_at():
                    raise pe
                del self._pending[res]  # presumed over: whatever it did has expired
            if not r["operationId"]:
                r["operationId"] = "op-" + secrets.token_hex(16)
            r["requestId"] = self.new_request_id()
            a = _Attempt(dict(r), AcquireCore(self.limits, r, self.new_request_id, self._backoff_jitter_unlocked,
                                              members), members)
            self._pending[res] = a
            return a

    def _reserved_unlocked(self, res, members, now):
        """Refuse an acquire of res (a set's: its name, and members) while
        the session holds a live lease on it or on any member, or an
        attempt of a set has one of them among its members (a plain
        attempt on res itself is _begin's to judge). Under self._mu."""
        for r in [res] + list(members or ()):
            if r in self._live:
                raise AlreadyHeld("fencegate: already held: resource %s: lease %s" % (r, self._live[r].lease_id))
            if members is not None and r != res:
                self._still_pending_unlocked(r, now)
        for name in sorted(self._pending):
            a = self._pending.get(name)
            if a is None or a.members is None or name == res:
                continue
            if res in a.members or any(m in a.members for m in members or ()):
                self._still_pending_unlocked(name, now)

    def _still_pending_unlocked(self, name, now):
        """Raise AcquirePending for the attempt kept under name unless there
        is none or it is presumed over (then it is forgotten: whatever it
        did has expired). Under self._mu."""
        a = self._pending.get(name)
        if a is None:
            return
        if a.active or now < a.core.reusable_at():
            raise AcquirePending(name, a.core.request["requestId"], a.core.reusable_at() / SECOND)
        del self._pending[name]

    def _backoff_jitter_unlocked(self):
        # Called by the acquire's core, under self._mu.
        return self._rand.random()

    def _finish(self, a, final):
        with self._mu:
            a.active = False
            if final and self._pending.get(a.req["resource"]) is a:
                del self._pending[a.req["resource"]]

    def _ended(self, names, shell):
        with self._mu:
            for name, h in zip(names, shell.handles):
                if self._live.get(name) is h:
                    del self._live[name]


_LOST = OutcomeUnknown("fencegate: no answer within the call's timeout")
