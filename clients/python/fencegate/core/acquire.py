"""One acquire's pure core (client/core/acquire.go), rule for rule.

It keeps the request ID until a final answer, asks for the grant by that
ID after a lost answer (GET /v1/requests/{id}) and sends the same acquire
again only once the registry says it has none, backs off, and reads every
answer. It never starts a second identity for one resource while the
first could still be granted. Like LeaseCore it does no I/O and reads no
clock: the session drives it. Not safe for concurrent use.

A lock set's acquire (members given; client/core/set.go) is the same core
with one difference: after a lost answer it sends the same set request
again (same request ID) instead of asking by request ID, because the
registry answers a retried set request from its members' entries: the
same grants while they live, their final states after. Its answer must
name every member, in member order, each under its member's request ID
(set.<i>.<id>), with HELD evidence; a member whose grant already ended
makes the whole answer final for that ID (a fresh one comes next): a set
is never taken in part.
"""

from ..errors import BadAnswer, Unreachable
from . import answer, machine
from .lease import (CALL_ACQUIRE, CALL_QUERY_REQUEST, Answer, Call, Lost, Ready, Transition, answer_lost,
                    member_request_id)
from .limits import ACQUIRE_BACKOFF_MAX, ACQUIRE_BACKOFF_MIN, MS


class AcquireCore:
    """The core of an acquire of request (a dict of the wire's
    AcquireRequest: resource, operationId, operationClass, requestId,
    ttlMs, waitMs). new_request_id draws a fresh ID for when the registry
    answers that this one's grant already ended; jitter draws in [0, 1)
    for the backoff. limits must have its defaults filled. members: a
    lock set's acquire, its resources sorted and distinct (request's
    resource is then the set's name, set_name(members))."""

    def __init__(self, limits, request, new_request_id, jitter, members=None):
        self.o = limits
        self.req = dict(request)
        self.members = list(members) if members is not None else None
        self.issued_set = None  # a set's grants, once granted
        self.m = machine.Machine()
        self.new_id, self.jitter = new_request_id, jitter
        self.first_sent = 0   # client clock, first send of this request ID (0: never)
        self.last_sent = 0    # client clock, last send of it
        self.done_sent = 0    # client clock, send of the call whose answer ended the acquire
        self.lost = False     # the last acquire's answer was lost: ask by request ID next
        self.backoff = ACQUIRE_BACKOFF_MIN
        self.retry_at = 0
        self.inflight = None
        self.call_n = 0
        self.lost_run = 0     # calls in a row without an answer
        self.locking, self.lock_until, self.lock_chunk = False, 0, 0
        self.done, self.issued, self.err = False, None, None
        self.trans = []
        self.unreachable = None

    @property
    def request(self):
        """The request as it will be sent (the current request ID)."""
        return dict(self.req)

    def wait_as_lock(self, chunk, until):
        """Queue as Session.lock does: each call waits at most chunk (and
        never past until, 0: no end), and a WAIT_TIMEOUT is a cue to ask
        again at once with the same request ID, keeping the place in the
        registry's FIFO queue."""
        self.locking, self.lock_chunk, self.lock_until = True, chunk, until

    def lease_from(self, now):
        """The client-clock instant the granted lease's TTL counts from:
        the send of the call whose answer carried the grant, plus
        expiresAfterMs, less the TTL (never later than now); without
        expiresAfterMs, the first send of the request ID. 0 until done."""
        if not self.done or self.issued is None:
            return 0
        frm = self.first_sent
        if self.issued.expires_after_ms > 0:
            frm = self.done_sent + self.issued.expires_after_ms * MS - self.issued.grant.ttl_ms * MS
        return min(frm, now)

    def reusable_at(self):
        """When an attempt whose answer never came is presumed over: TTL +
        wait + acquire margin after its last send."""
        return self.last_sent + (self.req.get("ttlMs", 0) + self.req.get("waitMs", 0)) * MS + self.o.acquire_margin

    def restart(self):
        """Let a new acquire call on a pending attempt ask at once (the
        request ID and whether its last answer was lost are kept)."""
        self.backoff, self.retry_at, self.lost_run, self.unreachable = ACQUIRE_BACKOFF_MIN, 0, 0, None

    def _ready(self, r):
        r.transitions, self.trans = self.trans, []
        return r

    def next(self, now):
        """The call to make at now, or none and the instant to look again
        (None: never, because the acquire is done or a call is in flight)."""
        if self.done or self.inflight is not None:
            return self._ready(Ready())
        if now < self.retry_at:
            return self._ready(Ready(wake=self.retry_at))
        self.call_n += 1
        if self.lost and self.members is None:
            self.inflight = Call(CALL_QUERY_REQUEST, now, self.o.call_timeout, self.call_n, request=dict(self.req))
            return self._ready(Ready(self.inflight))
        if self.first_sent == 0:
            self.first_sent = now
        self.last_sent = now
        if self.locking:
            wait = self.lock_chunk
            if self.lock_until:
                wait = min(wait, max(self.lock_until - now, MS))
            self.req["waitMs"] = max(wait // MS, 1)
        wait = self.req.get("waitMs", 0) * MS
        self.inflight = Call(CALL_ACQUIRE, now, self.o.call_timeout + wait, self.call_n, request=dict(self.req),
                             set_request=self._set_request())
        return self._ready(Ready(self.inflight))

    def _set_request(self):
        """The set request to send now (a dict of the wire's
        LockSetRequest: the current request ID and wait); None for a plain
        acquire."""
        if self.members is None:
            return None
        r = {"members": list(self.members), "operationId": self.req["operationId"],
             "operationClass": self.req["operationClass"], "requestId": self.req["requestId"],
             "ttlMs": self.req.get("ttlMs", 0), "waitMs": self.req.get("waitMs", 0)}
        return r

    def step(self, now, inp):
        """Feed an Answer or Lost for the call in flight at now."""
        if isinstance(inp, Lost):
            self._answer(now, inp.call, None, answer_lost())
        elif isinstance(inp, Answer):
            self._answer(now, inp.call, inp.set if self.members is not None else inp.issued, inp.err)
        else:
            raise TypeError("fencegate: acquire core: unknown input %r" % (inp,))
        return self._ready(Ready())

    def _answer(self, now, call, issued, err):
        if call is None or self.inflight is None or call.n != self.inflight.n or self.done:
            return
        self.inflight = None
        if call.kind == CALL_QUERY_REQUEST and answer.code_of(err) == "NOT_FOUND":
            # not granted (yet): send the same acquire again
            self.lost, self.backoff, self.retry_at = False, ACQUIRE_BACKOFF_MIN, now
            return
        c = answer.classify(err)
        if c != answer.LOST:
            self.lost_run = 0
        if c == answer.OK:
            self.done_sent = call.sent
            if self.members is not None:
                self._answered_set(now, issued)
                return
            self._answered(now, issued)
        elif c == answer.REFUSED:
            if self.locking and answer.code_of(err) == "WAIT_TIMEOUT" and (self.lock_until == 0 or now < self.lock_until):
                self.retry_at = now  # not yet: ask again at once, keeping the place in the queue
                return
            self._finish(None, err)
        elif c == answer.LOST:
            self.lost_run += 1
            if self.lost_run >= self.o.acquire_lost_max:
                u = Unreachable("fencegate: acquire %s: request %s: registry unreachable after %d calls without an "
                                "answer (last: %s)" % (self.req["resource"], self.req["requestId"], self.lost_run, err))
                u.__cause__ = err
                self.unreachable = u
            self.lost = True  # a set has no query by request ID: it sends the same acquire again
            frm = self.m.state
            to, _ = self.m.step(machine.EV_ACQUIRE_LOST)
            self.trans.append(Transition(frm, to, machine.EV_ACQUIRE_LOST))
            self._sleep(now)
        else:  # a definite "nothing changed, try again"
            self._sleep(now)

    def _answered(self, now, issued):
        g = issued.grant if issued is not None else None
        if (g is None or g.request_id != self.req["requestId"] or (issued.status is None and not g.held_statement())
                or (issued.status is not None and issued.status.grant != g.digest)):
            self._finish(None, BadAnswer("fencegate: acquire %s: answer is not about request %s"
                                         % (self.req["resource"], self.req["requestId"])))
            return
        if issued.status is not None and issued.status.state != "HELD":
            # a grant that already ended: a final answer for that ID
            self.req["requestId"], self.first_sent = self.new_id(), 0
            self.lost, self.backoff, self.retry_at = False, ACQUIRE_BACKOFF_MIN, now
            return
        self._finish(issued, None)

    def _answered_set(self, now, answers):
        bad = self._check_set(answers)
        if bad is not None:
            self._finish(None, BadAnswer("fencegate: acquire %s: %s" % (self.req["resource"], bad)))
            return
        if any(a.status is not None and a.status.state != "HELD" for a in answers):
            # a member's grant already ended: a final answer for that ID
            self.req["requestId"], self.first_sent = self.new_id(), 0
            self.lost, self.backoff, self.retry_at = False, ACQUIRE_BACKOFF_MIN, now
            return
        self.issued_set = list(answers)
        self._finish(answers[0], None)

    def _check_set(self, answers):
        """Why a set's answer is not about this request (None: it is)."""
        if answers is None or len(answers) != len(self.members):
            return "%s members answered, not %d" % (None if answers is None else len(answers), len(self.members))
        for i, a in enumerate(answers):
            g = a.grant
            if g is None or g.resource != self.members[i] or g.request_id != member_request_id(self.req["requestId"], i):
                return "member %d is not about %s under request %s" % (i, self.members[i], self.req["requestId"])
            if (a.status is None and not g.held_statement()) or (a.status is not None and a.status.grant != g.digest):
                return "member %s: no statement about its grant" % g.resource
        return None

    def _finish(self, issued, err):
        self.done, self.issued, self.err = True, issued, err

    def _sleep(self, now):
        d = int(float(self.backoff) * (0.5 + self.jitter()))
        self.backoff = min(self.backoff * 2, ACQUIRE_BACKOFF_MAX)
        self.retry_at = now + d
