"""Leader election over one registry resource (client/election.go).

As etcd's concurrency.Election and client-go's leaderelection are, with
one difference that matters: the leader's term is its grant's fence, and
a protected resource checks it. A deposed leader that still believes it
leads (paused past its lease, partitioned away) is refused at every gate
once its successor has written.
"""

import collections
import threading

from .errors import InvalidRequestError, OutcomeUnknown, Refused
from .grant import validate_resource

CAMPAIGN_CLASS_DEFAULT = "lead"
"""The operation class of a campaign's grant."""
OBSERVE_WAIT_DEFAULT = 30.0
"""How long one of observe's long polls waits for a change, in seconds."""
OBSERVE_RETRY_DEFAULT = 1.0
"""How long observe waits after a poll without an answer, in seconds."""

Leader = collections.namedtuple("Leader", "identity term lease since read_at revision")
Leader.__doc__ = """Who leads an election, as the registry read it: identity ("" when
nobody leads), term (the leader's fence; terms only rise), lease, since
(when it was granted) and read_at (registry clock, RFC 3339 text), and
the record's revision at the read."""


def leader_of(view):
    """The Leader a lock view (GET /v1/locks/{resource}) names."""
    h = view.get("holder") or {}
    return Leader(h.get("owner", ""), h.get("fence", 0), h.get("lease", ""), h.get("since", ""),
                  view.get("readAt", ""), view.get("revision", 0))


class Election:
    """The election held on resource name (e.g. "election/web-primary"):
    the resource policy and `fencegate status` apply to it. Candidates
    queue at the registry in FIFO order; the holder leads until it resigns
    (Lease.release) or its lease ends."""

    def __init__(self, session, name):
        try:
            validate_resource(name)
        except ValueError as e:
            raise InvalidRequestError("fencegate: election %r: %s" % (name, e)) from None
        self.session, self.name = session, name

    def campaign(self, ttl=None, operation_id="lead", operation_class=CAMPAIGN_CLASS_DEFAULT, timeout=None):
        """Wait (as Session.lock does, as long as timeout allows) until this
        session leads, and return the leader's Lease: its ``lost`` event is
        set the moment leadership is no longer certain, its ``fence`` is
        the term, and its envelopes carry that term to every protected
        write. Resign with release(), or by leaving its with-block."""
        return self.session.lock(self.name, ttl=ttl, operation_id=operation_id, operation_class=operation_class,
                                 timeout=timeout)

    def leader(self):
        """Who leads now (identity "" when nobody does)."""
        t = self.session.transport
        return leader_of(t.lock_status(self.name, self.session.options.call_timeout))

    def observe(self, stop=None):
        """Yield who leads: the leader now, then each change (a new term,
        or nobody leading), until stop (a threading.Event) is set. It
        long-polls the registry; a poll without an answer is retried after
        OBSERVE_RETRY_DEFAULT; a refusal (Refused, InvalidRequestError) is
        raised: asking again would only repeat it."""
        stop = stop or threading.Event()
        t, call = self.session.transport, self.session.options.call_timeout
        view, last = None, None
        while not stop.is_set():
            try:
                if view is None:
                    view = t.lock_status(self.name, call)
                else:
                    wait = OBSERVE_WAIT_DEFAULT
                    view = t.watch_lock(self.name, view.get("revision", 0), wait * 1000, wait + call)
            except (Refused, InvalidRequestError):
                raise
            except OutcomeUnknown:
                stop.wait(OBSERVE_RETRY_DEFAULT)
                continue
            ld = leader_of(view)
            if last is None or ld.lease != last.lease:
                last = ld
                yield ld
