"""One lease's pure core (client/core/lease.go and envelope.go).

As etcd-io/raft's RawNode is a node's: the state machine, the timing,
which registry call to make next and how to read its answer, whether an
envelope may be built, and what a release must wait for. It does no I/O,
reads no clock, starts no thread and takes no lock: every step takes the
client's now (integer nanoseconds), and the shell makes the calls it asks
for. The Python shell (fencegate.lease.Lease) drives it with real time and
HTTP; the scenario runner (tests/test_lease_scenarios.py) drives it with
the Go SDK's scenario files. Not safe for concurrent use: the shell
serializes.

The driving loop: call next(now); when its call is not None, make it (at
most one is ever in flight), then step an Answer, or Lost once the call's
timeout has passed without one; otherwise call next again at its wake (or
when something changes: an envelope was refused at the deadline, a
Release was stepped). While a call is in flight wake names the local
deadline: a shell that also looks then reports the loss at the deadline
itself. Readers between steps use state_at and certain_at, which see the
deadline at once.
"""

import json

from ..errors import NotCertain, OutcomeUnknown, ProofStale, is_final
from . import answer, machine
from .schedule import DUE_DEADLINE, DUE_QUERY, DUE_REFRESH, DUE_RENEW, Schedule

# The calls a core asks for.
CALL_RENEW = "renew"                  # POST /v1/renew (also a fresh proof)
CALL_REFRESH = "refresh"              # POST /v1/status: only the status proof needs refreshing
CALL_QUERY = "query"                  # POST /v1/renew while OWNERSHIP_UNKNOWN: its answer settles the state
CALL_RELEASE = "release"              # POST /v1/release
CALL_ACQUIRE = "acquire"              # POST /v1/acquire (the acquire's core)
CALL_QUERY_REQUEST = "query-request"  # GET /v1/requests/{id}: the grant of a request whose answer was lost
CALL_DOWNGRADE = "downgrade"          # POST /v1/downgrade: the write lease becomes a reader's (the downgrade's core)


class Call:
    """One registry call a core asked for: kind, sent (client clock), how
    long its answer may take before it counts as lost (timeout, ns), and
    what it sends (grant for a lease's calls, request for an acquire's).
    set: a lock set lease's member grants, in member order: the call is
    about every member at once (renew and query: one set renewal; release:
    one set release; refresh: a status query per member, answered
    together); None for a plain lease. set_request: the lock set to
    acquire (a dict of the wire's LockSetRequest; CALL_ACQUIRE of a set's
    acquire core, None otherwise). n matches the answer to the call."""

    __slots__ = ("kind", "sent", "timeout", "grant", "request", "set", "set_request", "n")

    def __init__(self, kind, sent, timeout, n, grant=None, request=None, set=None, set_request=None):
        self.kind, self.sent, self.timeout, self.n = kind, sent, timeout, n
        self.grant, self.request = grant, request
        self.set, self.set_request = set, set_request

    def __repr__(self):
        return "Call(%s #%d sent=%d timeout=%d)" % (self.kind, self.n, self.sent, self.timeout)


class Transition:
    """One step of the machine, for the shell's hooks."""

    __slots__ = ("frm", "to", "event")

    def __init__(self, frm, to, event):
        self.frm, self.to, self.event = frm, to, event

    def __repr__(self):
        return "%s --%s--> %s" % (self.frm, self.event, self.to)


class Ready:
    """What a step leaves the shell: the call to make (None: none), when
    to look again (wake, None: only when something changes), the
    machine's transitions since the last Ready, and for BuildEnvelope the
    envelope (its JSON text) or the error that refused it."""

    __slots__ = ("call", "wake", "transitions", "envelope", "err")

    def __init__(self, call=None, wake=None, transitions=(), envelope=None, err=None):
        self.call, self.wake, self.transitions, self.envelope, self.err = call, wake, transitions, envelope, err


# The inputs a lease core steps.
class Answer:
    """The answer to call: issued (a grant.Issued, or None) or err (the
    exception the transport raised). A lock set's call is answered with
    set: every member's Issued, in member order (issued: the first)."""
    __slots__ = ("call", "issued", "err", "set")

    def __init__(self, call, issued=None, err=None, set=None):
        self.call, self.issued, self.err, self.set = call, issued, err, set


class Lost:
    """call got no answer within its timeout: it may or may not have been applied."""
    __slots__ = ("call",)

    def __init__(self, call):
        self.call = call


class Release:
    """Begin giving the lease up; with drain, only once no unsettled
    envelope's proof can still be accepted."""
    __slots__ = ("drain",)

    def __init__(self, drain=True):
        self.drain = drain


class BuildEnvelope:
    """Build the envelope of segment seq with payload_digest ("sha256:…"),
    for member (a lock set's member index; 0 for a plain lease): each
    member counts its own segments, for its own gate."""
    __slots__ = ("seq", "payload_digest", "member")

    def __init__(self, seq, payload_digest, member=0):
        self.seq, self.payload_digest, self.member = seq, payload_digest, member


class Settle:
    """The resource answered segment seq (of member) with outcome."""
    __slots__ = ("seq", "outcome", "member")

    def __init__(self, seq, outcome, member=0):
        self.seq, self.outcome, self.member = seq, outcome, member


class Forget:
    """Segment seq's envelope (of member) never left the process (its write was rolled back)."""
    __slots__ = ("seq", "member")

    def __init__(self, seq, member=0):
        self.seq, self.member = seq, member


class Downgrading:
    """The lease's holder began to downgrade it (downgrade.DowngradeCore):
    from the step on the lease builds no envelope — the registry admits
    other readers once every HELD statement of the write lease has
    expired, on the promise that its holder stopped writing — whatever
    the downgrade's answer. Renewals go on (the shell sends none while its
    downgrade call is in flight); a refused downgrade leaves a lease that
    still builds none: release it."""
    __slots__ = ()


class Granted:
    """A lease the registry granted: the answer, the operation its root
    binds, and from (client clock): the instant its TTL counts from (the
    acquire core's lease_from). A lock set's: set, every member's answer
    in member order (issued: the first)."""
    __slots__ = ("issued", "operation_id", "frm", "set")

    def __init__(self, issued, operation_id, frm, set=None):
        self.issued, self.operation_id, self.frm = issued, operation_id, frm
        self.set = list(set) if set else None


def evidence_until(issued):
    """How long an answer's HELD evidence lasts (registry clock)."""
    st = issued.statement()
    return st[2] if st else 0


def member_request_id(request_id, i):
    """The request ID member i (from 0, in sorted order) of the lock set
    whose request ID is request_id is granted under: "set.<i>.<id>"
    (wire.MemberRequestID)."""
    return "set.%d.%s" % (i, request_id)


def set_name(members):
    """How a lock set is named in messages and kept by the session: its
    members, sorted, in braces ("{a,b}"; core.SetName). Not a resource."""
    return "{" + ",".join(members) + "}"


SEGMENT_MAX = (1 << 63) - 1
"""The highest segment number an envelope may carry (gate.CounterMax)."""


class LeaseCore:
    """One lease's core, HELD from the start: see the module's doc.

    A lock set is held as ONE lease core (client/core/set.go): one
    machine, one schedule, one call in flight, whatever the number of
    members. Its members share the TTL and the issue instant, so they
    share the local deadline; a renewal renews every member in one
    registry call (Call.set, answered with every member's status), so the
    set is renewed whole or not at all; and the registry's definite word
    that any one member is not HELD is the whole set's EXPIRED: the
    client never keeps a part of a set. Each member keeps its own grant,
    proof and status, for envelopes to its own gate (BuildEnvelope.member)."""

    def __init__(self, limits, granted, jitter=None):
        self.o = limits
        self.m = machine.Machine(machine.HELD)
        self.issued = granted.issued
        # A lock set's members, in member order, each its grant, proof and
        # latest HELD status (None for a plain lease).
        self.set = list(granted.set) if granted.set else None
        if self.set:
            self.issued = self.set[0]
        self.operation = granted.operation_id
        self.jitter = jitter or (lambda: 0.0)
        self.inflight = None
        self.call_n = 0
        self.releasing = False
        self.downgraded = False  # Downgrading was stepped: no envelope from then on
        self.release_at = 0
        self.unsettled = {}  # (member, segment) → the latest status-proof validUntil attached to it
        self.trans = []
        self.sched = Schedule.confirmed(limits, granted.frm, self.ttl(), self.evidence_until(), self.jitter())

    # --- reads -------------------------------------------------------------

    @property
    def state(self):
        """The machine's state."""
        return self.m.state

    @property
    def grant(self):
        """The grant (immutable)."""
        return self.issued.grant

    def ttl(self):
        """The grant's TTL in ns."""
        return self.issued.grant.ttl_ms * 1_000_000

    def certain(self):
        """Whether the client may produce new effects (not looking at the clock)."""
        return machine.certain(self.m.state) and not self.releasing

    def state_at(self, now):
        """The state a reader sees at now: HELD or RENEWING at or past the
        local deadline reads OWNERSHIP_UNKNOWN (the step the machine takes
        at its next next or answer). Changes nothing."""
        if machine.certain(self.m.state) and now >= self.sched.deadline:
            return machine.UNKNOWN
        return self.m.state

    def certain_at(self, now):
        """Whether the client may produce new effects at now."""
        return machine.certain(self.state_at(now)) and not self.releasing

    def evidence_until(self):
        """How long the lease's HELD evidence lasts (registry clock): a
        set's is its first member's to lapse."""
        if self.set is None:
            return evidence_until(self.issued)
        return min(evidence_until(m) for m in self.set)

    def member(self, i):
        """Member i's Issued (a plain lease has only 0); IndexError otherwise."""
        if self.set is None:
            if i != 0:
                raise IndexError("fencegate: lease %s has no member %r" % (self.issued.grant.lease, i))
            return self.issued
        if not isinstance(i, int) or not 0 <= i < len(self.set):
            raise IndexError("fencegate: lock set has no member %r" % (i,))
        return self.set[i]

    def set_grants(self):
        """A set's grants, in member order (None for a plain lease)."""
        return None if self.set is None else [m.grant for m in self.set]

    def leftovers(self):
        """What a lock set that ended EXPIRED may still hold at the
        registry, and from when the client may give it up: (member grants,
        instant), or None for a plain lease or a set that did not end
        EXPIRED (core.LeaseView.Leftovers). The registry ends a set's
        renewal when any one member ended and renews none, but the other
        members' leases run on to their TTL; releasing them (one ordinary
        release each) frees them early, once no unsettled envelope of the
        set can still be accepted: at drain_until (0: at once)."""
        if self.set is None or self.m.state != machine.EXPIRED:
            return None
        return [m.grant for m in self.set], self.drain_until()

    def drain_until(self):
        """The instant after which no unsettled envelope's proof can still
        be accepted by a gate (0 when every envelope is settled)."""
        until = max(self.unsettled.values(), default=0)
        return until + self.o.drain_margin if until else 0

    # --- steps ---------------------------------------------------------------

    def _ready(self, r):
        r.transitions, self.trans = self.trans, []
        return r

    def step(self, now, inp):
        """Feed the lease one input at now; return what follows (no call:
        next says which call is due)."""
        r = Ready()
        if isinstance(inp, Answer):
            self._answer(now, inp.call, inp.issued, inp.err, inp.set)
        elif isinstance(inp, Lost):
            self._answer(now, inp.call, None, answer_lost(), None)
        elif isinstance(inp, Release):
            self._begin_release(now, inp.drain)
        elif isinstance(inp, BuildEnvelope):
            try:
                r.envelope = self._envelope(now, inp.member, inp.seq, inp.payload_digest)
            except (NotCertain, ProofStale, ValueError, IndexError) as e:
                r.err = e
        elif isinstance(inp, Settle):
            if is_final(inp.outcome):
                self.unsettled.pop((inp.member, inp.seq), None)
        elif isinstance(inp, Forget):
            self.unsettled.pop((inp.member, inp.seq), None)
        elif isinstance(inp, Downgrading):
            self.downgraded = True
        else:
            raise TypeError("fencegate: lease core: unknown input %r" % (inp,))
        return self._ready(r)

    def next(self, now):
        """The tick: the call to make at now (recorded as in flight; wake
        is then the local deadline while ownership is certain), or none and
        the instant to look again. It first notices the local deadline:
        HELD or RENEWING at or past it becomes OWNERSHIP_UNKNOWN, whether
        or not a call is in flight."""
        call, wake = self._next(now)
        if call is not None and machine.certain(self.m.state) and not self.releasing:
            wake = self.sched.deadline  # the guard beside the call
        return self._ready(Ready(call, wake))

    def _next(self, now):
        if machine.terminal(self.m.state):
            return None, None
        self._observe(now)
        if self.inflight is not None:
            return None, self._deadline_wake()
        if self.releasing and now < self.release_at:
            dl = self._deadline_wake()
            if dl is not None and dl < self.release_at:
                return None, dl
            return None, self.release_at
        if self.releasing:
            return self._send(CALL_RELEASE, now), None
        due, wake = self.sched.check(self.o, self.m.state, now)
        if due == DUE_RENEW:
            self._step(machine.EV_RENEW_DUE, now)
            return self._send(CALL_RENEW, now), None
        if due == DUE_REFRESH:
            self._step(machine.EV_RENEW_DUE, now)
            return self._send(CALL_REFRESH, now), None
        if due == DUE_QUERY:
            return self._send(CALL_QUERY, now), None
        return None, wake

    def _step(self, ev, now):
        frm = self.m.state
        to, fx = self.m.step(ev)
        if fx.query:
            self.sched.query_at = now
        self.trans.append(Transition(frm, to, ev))

    def _send(self, kind, now):
        self.call_n += 1
        self.inflight = Call(kind, now, self.o.lease_call_timeout(self.ttl()), self.call_n, grant=self.issued.grant,
                             set=self.set_grants())
        return self.inflight

    def _observe(self, now):
        if not machine.certain(self.m.state):
            return
        due, _ = self.sched.check(self.o, self.m.state, now)
        if due == DUE_DEADLINE:
            self._step(machine.EV_DEADLINE, now)

    def _deadline_wake(self):
        return self.sched.deadline if machine.certain(self.m.state) else None

    def _answer(self, now, call, issued, err, set_):
        if call is None or self.inflight is None or call.n != self.inflight.n:
            return  # an answer to a call no longer in flight
        self.inflight = None
        if self.set is not None:
            issued = set_  # a set's calls are answered, and judged, member by member
        self._observe(now)
        late = now - call.sent > call.timeout
        if call.kind in (CALL_RENEW, CALL_REFRESH):
            self._renew_answer(now, call, issued, err, late)
        elif call.kind == CALL_QUERY:
            self._query_answer(now, call, issued, err, late)
        elif call.kind == CALL_RELEASE:
            self._release_answer(now, err)

    def _renew_answer(self, now, call, issued, err, late):
        if self.m.state == machine.UNKNOWN:
            self._deadline_answer(now, call, issued, err, late)
            return
        if self.m.state != machine.RENEWING:
            return
        held, refused = self._judge(issued, err)
        if held and not late:
            self._confirm(issued, call.sent, call.kind == CALL_REFRESH)
            self._step(machine.EV_RENEW_OK, now)
        elif refused:
            self._step(machine.EV_RENEW_REFUSED, now)
        elif held and late:
            self._step(machine.EV_RENEW_LATE, now)
        else:
            self._step(machine.EV_RENEW_LOST, now)

    def _deadline_answer(self, now, call, issued, err, late):
        # A renewal is the very call a query is: a timely HELD answer
        # confirms the grant; a refresh does not renew, only its definite
        # refusal counts; otherwise the query is still due at once.
        held, refused = self._judge(issued, err)
        if refused:
            self._step(machine.EV_QUERY_EXPIRED, now)
        elif held and not late and call.kind == CALL_RENEW:
            self._confirm(issued, call.sent, False)
            self._step(machine.EV_QUERY_HELD, now)
        elif call.kind == CALL_RENEW:
            self._step(machine.EV_QUERY_UNAVAILABLE, now)

    def _query_answer(self, now, call, issued, err, late):
        if self.m.state != machine.UNKNOWN:
            return
        held, refused = self._judge(issued, err)
        if held and not late:
            self._confirm(issued, call.sent, False)
            self._step(machine.EV_QUERY_HELD, now)
        elif refused:
            self._step(machine.EV_QUERY_EXPIRED, now)
        else:
            self._step(machine.EV_QUERY_UNAVAILABLE, now)
            self.sched.query_at = now + self.o.query_interval

    def _release_answer(self, now, err):
        c = answer.classify(err)
        if c == answer.OK:  # even late: a release cannot be undone
            self._step(machine.EV_RELEASE_OK, now)
        elif c == answer.REFUSED:
            self._step(machine.EV_RELEASE_REFUSED, now)
        else:
            self._step(machine.EV_RELEASE_LOST, now)
            self.release_at = now + self.o.query_interval

    def _judge(self, issued, err):
        """held: the registry said this very grant is HELD; refused: it
        said definitely it is not. An answer about another grant says
        nothing about this one."""
        c = answer.classify(err)
        if c == answer.REFUSED:
            return False, True
        if c != answer.OK:
            return False, False
        if self.set is not None:
            return self._judge_set(issued)
        return _judge_one(self.issued.grant, issued)

    def _judge_set(self, answers):
        """held when every member is HELD; refused when any member is
        definitely not (the set ends whole: losing one member ends the
        set); otherwise (a member missing, or about another grant) the
        answer says nothing."""
        if answers is None or len(answers) != len(self.set):
            return False, False
        held = True
        for m, a in zip(self.set, answers):
            h, r = _judge_one(m.grant, a)
            if r:
                return False, True
            held = held and h
        return held, False

    def _confirm(self, issued, sent, status_only):
        if self.set is not None:
            self.set = [_with_status(m, a) for m, a in zip(self.set, issued)]
            self.issued = self.set[0]
        else:
            self.issued = _with_status(self.issued, issued)
        if status_only:
            self.sched = self.sched.refreshed(self.o, self.evidence_until())
            return
        self.sched = Schedule.confirmed(self.o, sent, self.ttl(), self.evidence_until(), self.jitter())

    # --- envelopes and release ---------------------------------------------

    def _envelope(self, now, member, seq, digest):
        issued = self.member(member)
        g = self.issued.grant
        if not machine.certain(self.m.state):
            raise NotCertain(g.lease, self.m.state, "ownership not certain")
        if self.releasing:
            raise NotCertain(g.lease, self.m.state, "releasing")
        if self.downgraded:
            raise NotCertain(g.lease, self.m.state, "downgraded to a reader")
        if now >= self.sched.deadline:
            raise NotCertain(g.lease, self.m.state, "local deadline passed")
        if not self.sched.proof_usable(self.o, now):
            raise ProofStale("fencegate: status proof stale: lease %s: valid until %d, margin %d ns"
                             % (g.lease, self.sched.proof_until, self.o.proof_margin))
        if not isinstance(seq, int) or isinstance(seq, bool) or not 1 <= seq <= SEGMENT_MAX:
            raise ValueError("fencegate: envelope: segmentSeq %r outside 1..%d" % (seq, SEGMENT_MAX))
        if not isinstance(digest, str) or not _is_digest(digest) or digest == "sha256:" + "0" * 64:
            raise ValueError("fencegate: envelope: payloadDigest %r: want sha256:<64 lowercase hex>" % (digest,))
        text = envelope_json(issued, self.operation, seq, digest)
        until = evidence_until(issued)
        if until > self.unsettled.get((member, seq), 0):
            self.unsettled[(member, seq)] = until
        return text

    def _begin_release(self, now, drain):
        if machine.terminal(self.m.state) or self.releasing:
            return
        self.releasing, self.release_at = True, now
        until = self.drain_until()
        if drain and until > now:
            self.release_at = until


def _judge_one(g, issued):
    """Whether the answer issued is the registry's word that grant g is
    HELD (True, False), that it is not (False, True), or neither."""
    if issued is None or issued.status is None or issued.status.grant != g.digest:
        return False, False
    if issued.status.state != "HELD":
        return False, True
    return True, False


def _with_status(kept, issued):
    """kept with issued's status, its proof and the gate proofs that came with it."""
    return type(kept)(kept.grant, kept.grant_proof, issued.status, issued.status_proof, kept.expires_after_ms,
                      issued.gate_proofs)


def answer_lost():
    """The error a Lost input stands for."""
    return OutcomeUnknown("fencegate: outcome unknown: no answer in time")


def _is_digest(s):
    return len(s) == 71 and s.startswith("sha256:") and all(c in "0123456789abcdef" for c in s[7:])


def envelope_json(issued, operation_id, seq, digest):
    """The envelope of segment seq (docs/api.md, "The gate's envelope"):
    the JSON the Go builder (gate.Mutation.MarshalJSON) writes, byte for
    byte: the fields in their order, no spaces, status and statusProof
    left out before the first renewal (the grant's own held statement is
    then the evidence), gateProofs left out when there are none."""
    g = issued.grant
    m = {"resource": g.resource, "lease": g.lease, "operationId": operation_id, "fenceToken": g.fence_token,
         "segmentSeq": seq, "payloadDigest": digest, "grant": g.text.decode("ascii"), "grantProof": issued.grant_proof}
    if issued.status is not None:
        m["status"], m["statusProof"] = issued.status.text.decode("ascii"), issued.status_proof
    if issued.gate_proofs:
        m["gateProofs"] = [_gate_proof(p) for p in issued.gate_proofs]
    return json.dumps(m, separators=(",", ":"))


def _gate_proof(p):
    out = {"gate": p["gate"], "grantProof": p["grantProof"]}
    if p.get("statusProof"):
        out["statusProof"] = p["statusProof"]
    return out
