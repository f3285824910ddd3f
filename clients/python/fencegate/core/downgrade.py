"""A write lease's downgrade's pure core (client/core/downgrade.go), rule
for rule.

POST /v1/downgrade turns the write lease on a read/write lock into a
reader's lease in one registry write. The core keeps the request ID it was
given until a definite answer: a lost answer is sent again under the same
ID after DOWNGRADE_RETRY_WAIT, because the registry answers a retry with
the reader's grant it already made, and a fresh ID would ask to downgrade
a lease that already ended. It reads the answer: the reader's grant must
name resource + "/_read" with the write lease's fence and owner. The write
lease is told first (lease.Downgrading): from that step on it builds no
envelope. Like the other cores it does no I/O and reads no clock:
Session.downgrade drives it, and the lease scenarios drive it as Go's is
driven. There is no end but the shell's. Not safe for concurrent use.
"""

from ..errors import BadAnswer
from . import answer
from .lease import CALL_DOWNGRADE, Answer, Call, Granted, Lost, Ready, answer_lost
from .limits import MS

DOWNGRADE_RETRY_WAIT = 100 * MS
"""The pause between two sends of a downgrade whose answer was lost (the
same request ID: the registry answers a retry with the grant it made)."""

READ_SEGMENT = "_read"
"""The last segment of a reader's resource: NAME/_read (wire.ReadSegment)."""


class DowngradeCore:
    """The downgrade of write (the write lease's grant), whose operation
    is operation_id, under request_id (drawn once by the shell). Its
    calls are CALL_DOWNGRADE, call.request the wire's DowngradeRequest (a
    dict), call.grant the write lease's grant. done once the registry
    answered definitely: granted (the reader's lease to start, a Granted)
    or err (its refusal, or BadAnswer)."""

    def __init__(self, limits, write, operation_id, request_id):
        self.o, self.write, self.operation = limits, write, operation_id
        self.req = {"resource": write.resource, "lease": write.lease, "requestId": request_id}
        self.retry_at = 0
        self.inflight = None
        self.call_n = 0
        self.done, self.granted, self.err = False, None, None

    @property
    def request_id(self):
        """The request ID, the same on every send."""
        return self.req["requestId"]

    def next(self, now):
        """The call to make at now (recorded as in flight), or none and
        the instant to look again (None: never, because the downgrade is
        done or a call is in flight)."""
        if self.done or self.inflight is not None:
            return Ready()
        if now < self.retry_at:
            return Ready(wake=self.retry_at)
        self.call_n += 1
        self.inflight = Call(CALL_DOWNGRADE, now, self.o.lease_call_timeout(self.write.ttl_ms * MS), self.call_n,
                             grant=self.write, request=dict(self.req))
        return Ready(self.inflight)

    def step(self, now, inp):
        """Feed an Answer (issued: the reader's grant) or Lost for the call
        in flight at now."""
        if isinstance(inp, Lost):
            self._answer(now, inp.call, None, answer_lost())
        elif isinstance(inp, Answer):
            self._answer(now, inp.call, inp.issued, inp.err)
        else:
            raise TypeError("fencegate: downgrade core: unknown input %r" % (inp,))
        return Ready()

    def _answer(self, now, call, issued, err):
        if self.done or call is None or self.inflight is None or call.n != self.inflight.n:
            return
        self.inflight = None
        c = answer.classify(err)
        if c == answer.OK:
            self._answered(now, call.sent, issued)
        elif c == answer.REFUSED:
            self.done, self.err = True, err
        else:  # lost, or CONFLICT: the same request again
            self.retry_at = now + DOWNGRADE_RETRY_WAIT

    def _answered(self, now, sent, issued):
        """The reader's lease counts from the send plus the answer's
        expires_after_ms less the TTL (as an acquire's), never later than now."""
        self.done = True
        w = self.write
        g = issued.grant if issued is not None else None
        if (g is None or g.resource != w.resource + "/" + READ_SEGMENT or g.fence_token != w.fence_token
                or g.owner != w.owner):
            self.err = BadAnswer("fencegate: downgrade %s: the registry answered another grant" % w.resource)
            return
        frm = sent
        if issued.expires_after_ms > 0:
            frm = sent + issued.expires_after_ms * MS - g.ttl_ms * MS
        self.granted = Granted(issued, self.operation, min(frm, now))
