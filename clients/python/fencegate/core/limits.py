"""The cores' named time limits (client/core/limits.go), in nanoseconds.

The client's ``Options`` (seconds, for people) give them; the cores read
nothing else: no clock, no random source. Every rule here is the Go SDK's,
number for number: the lease clock of docs/guarantees.md.
"""

from ..errors import SettingsError, TTLSettingsError

MS = 1_000_000
"""One millisecond in nanoseconds."""
SECOND = 1_000_000_000
"""One second in nanoseconds."""

ACQUIRE_BACKOFF_MIN = 100 * MS
"""The acquire's first backoff after an answer that says "ask again" or none."""
ACQUIRE_BACKOFF_MAX = 2 * SECOND
"""The acquire's backoff doubles, jittered, up to this."""

CALLS_PER_LIFE = 4
"""A lease's calls time out after at most its local life (TTL −
expiry margin) divided by this, so that the latest renewal plus its whole
timeout ends by the deadline whenever RENEW_LATEST_MAX holds."""
RENEW_LATEST_MAX = 1 - 1.0 / CALLS_PER_LIFE
"""Bounds renew_fraction × (1 + renew_jitter): the latest renewal goes at
most this share into the local life."""
CALL_TIMEOUT_FLOOR = 250 * MS
"""The shortest call timeout the TTL minimum lets a lease fall to (unless
call_timeout itself is shorter)."""


def div_trunc(a, b):
    """a / b for integers, truncated toward zero as Go's integer division."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def duration(ns):
    """A duration in nanoseconds as Go's time.Duration prints it, for
    messages: 2s, 250ms, 1.5s."""
    if ns % SECOND == 0:
        return "%ds" % (ns // SECOND)
    if ns % MS == 0 and abs(ns) < SECOND:
        return "%dms" % (ns // MS)
    return "%gs" % (ns / SECOND)


class Limits:
    """The time limits (nanoseconds) and fractions the cores read; built by
    Options.limits(), which fills every default."""

    __slots__ = ("renew_fraction", "renew_jitter", "call_timeout", "expiry_margin", "proof_margin",
                 "proof_refresh_lead", "query_interval", "acquire_margin", "acquire_lost_max", "drain_margin")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.pop(k))
        if kw:
            raise TypeError("Limits: unknown %s" % sorted(kw))

    def life(self, ttl):
        """A lease's local life: how long after the send of its last
        confirmed renewal it may produce effects, TTL − expiry margin."""
        return ttl - self.expiry_margin

    def lease_call_timeout(self, ttl):
        """How long a lease of ttl waits for a renewal, refresh, query or
        release: call_timeout, but at most a quarter of the local life."""
        return max(min(self.call_timeout, div_trunc(self.life(ttl), CALLS_PER_LIFE)), MS)

    def ttl_min(self):
        """The shortest TTL a lease can keep: expiry margin + max(4 ×
        min(call timeout, 250 ms), 2 × proof margin); 2 s with the defaults,
        the registry's default minimum."""
        calls = CALLS_PER_LIFE * min(self.call_timeout, CALL_TIMEOUT_FLOOR)
        return self.expiry_margin + max(calls, 2 * self.proof_margin)

    def check_ttl(self, ttl):
        """Raise TTLSettingsError for a TTL shorter than ttl_min, naming the
        shortest that works."""
        least = self.ttl_min()
        if ttl < least:
            raise TTLSettingsError(duration(ttl), "at least " + duration(least),
                                   "ExpiryMargin %s + max(%d × min(CallTimeout %s, %s), 2 × ProofMargin %s)" % (
                                       duration(self.expiry_margin), CALLS_PER_LIFE, duration(self.call_timeout),
                                       duration(CALL_TIMEOUT_FLOOR), duration(self.proof_margin)))

    def check(self):
        """Raise SettingsError for limits no lease can work with (the Go
        SDK's core.Limits.Check, rule for rule)."""
        for name, v in (("CallTimeout", self.call_timeout), ("ExpiryMargin", self.expiry_margin),
                        ("ProofMargin", self.proof_margin), ("ProofRefreshLead", self.proof_refresh_lead),
                        ("QueryInterval", self.query_interval), ("AcquireMargin", self.acquire_margin),
                        ("DrainMargin", self.drain_margin)):
            if v <= 0:
                raise SettingsError(name, duration(v), "above 0", "a time limit")
        f, j = self.renew_fraction, self.renew_jitter
        if self.acquire_lost_max < 1:
            raise SettingsError("AcquireLostMax", self.acquire_lost_max, "at least 1", "calls in a row without an answer")
        if not (0 <= j < 1):
            raise SettingsError("RenewJitter", j, "in [0, 1)", "a share of the renewal interval")
        if not (f > 0 and f * (1 + j) <= RENEW_LATEST_MAX * (1 + 1e-12)):
            raise SettingsError("RenewFraction", f, "in (0, %.4g]" % (RENEW_LATEST_MAX / (1 + j)),
                                "RenewFraction × (1 + RenewJitter %s) at most %s: the latest renewal and its timeout, "
                                "a quarter of the local life, end by the deadline" % (j, RENEW_LATEST_MAX))
        if self.proof_refresh_lead <= self.proof_margin:
            raise SettingsError("ProofRefreshLead", duration(self.proof_refresh_lead),
                                "above ProofMargin " + duration(self.proof_margin),
                                "the proof is refreshed before it stops being usable")
