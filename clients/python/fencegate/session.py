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

from .core.acquire import AcquireCore
from .core.lease import CALL_QUERY_REQUEST, Answer, Granted, Lost
from .errors import AcquirePending, AlreadyHeld, FencegateError, InvalidRequestError, OutcomeUnknown
from .grant import validate_resource
from .lease import Lease
from .options import Options, ns
from .transport import Transport

SECOND = 1_000_000_000
MS = 1_000_000

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
    """An acquire whose request ID is kept until a final answer."""

    def __init__(self, req, core):
        self.req, self.core, self.active = req, core, True


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
                timeout=None, permits=0):
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
        bounds the whole call: Timeout, the request ID kept."""
        return self._acquire(self._request(resource, ttl, ns(wait) // MS, operation_id, operation_class, permits),
                             timeout, False)

    def lock(self, resource, ttl=None, operation_id=None, operation_class=OPERATION_CLASS_DEFAULT, timeout=None,
             permits=0):
        """Acquire resource, waiting for it as long as timeout (seconds;
        None: no end) allows, in FIFO order: it queues at the registry in
        long polls of at most options.lock_wait_chunk, each asking again
        with the same request ID, so the waiter keeps its place in the
        queue. Returns the Lease HELD; use it as a context manager to
        release it when the block ends. With a timeout, the queueing ends
        options.call_timeout before it, so the registry's last answer
        (WaitTimeoutError, naming who holds the resource) arrives in time.
        permits: as for acquire (a semaphore's waiters queue FIFO across
        its slots)."""
        r = self._request(resource, ttl, ns(self.options.lock_wait_chunk) // MS, operation_id, operation_class, permits)
        return self._acquire(r, timeout, True)

    def _request(self, resource, ttl, wait_ms, operation_id, operation_class, permits):
        if ttl is None:
            ttl = self.options.ttl_default  # always explicit: a lost answer is waited out for exactly this
        r = {"resource": resource, "operationId": operation_id or "", "operationClass": operation_class,
             "requestId": "", "ttlMs": ns(ttl) // MS, "waitMs": wait_ms}
        if permits:  # a plain lock sends none (permits 0 is the wire's "no semaphore")
            if not isinstance(permits, int) or isinstance(permits, bool) or permits < 0:
                raise InvalidRequestError("fencegate: acquire: permits %r: want a whole number of permits" % (permits,))
            r["permits"] = permits
        return r

    def _acquire(self, r, timeout, locking):
        deadline = None if timeout is None else self.clock.now() + ns(timeout)
        a = self._begin(r)
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
            with self._mu:
                done = a.core.step(self.clock.now(), Lost(call) if err is _LOST else Answer(call, issued, err))
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
        name = a.req["resource"]  # a semaphore's permit is kept under the semaphore's name, not its slot's
        lease = Lease(self, Granted(core.issued, a.req["operationId"], core.lease_from(self.clock.now())),
                      on_ended=lambda lease: self._ended(name, lease))
        with self._mu:
            if self._pending.get(a.req["resource"]) is a:
                del self._pending[a.req["resource"]]
            self._live[a.req["resource"]] = lease
        return lease

    def _notify(self, request_id, transitions):
        if self.on_transition is not None:
            for t in transitions:
                self.on_transition(request_id, t.frm, t.to, t.event)

    def _begin(self, r):
        """Reserve the resource for one acquire: reuse the pending request ID
        when the parameters match; refuse while another attempt or a live
        lease exists."""
        try:
            validate_resource(r["resource"])
        except ValueError as e:
            raise InvalidRequestError("fencegate: acquire: %s" % e) from None
        self.limits.check_ttl(r["ttlMs"] * MS)
        with self._mu:
            res = r["resource"]
            if res in self._live:
                raise AlreadyHeld("fencegate: already held: resource %s: lease %s" % (res, self._live[res].lease_id))
            now = self.clock.now()
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
            a = _Attempt(dict(r), AcquireCore(self.limits, r, self.new_request_id, self._backoff_jitter_unlocked))
            self._pending[res] = a
            return a

    def _backoff_jitter_unlocked(self):
        # Called by the acquire's core, under self._mu.
        return self._rand.random()

    def _finish(self, a, final):
        with self._mu:
            a.active = False
            if final and self._pending.get(a.req["resource"]) is a:
                del self._pending[a.req["resource"]]

    def _ended(self, name, lease):
        with self._mu:
            if self._live.get(name) is lease:
                del self._live[name]


_LOST = OutcomeUnknown("fencegate: no answer within the call's timeout")
