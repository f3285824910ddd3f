"""The client's named time limits, in seconds, with the Go SDK's defaults
(client/options.go): every default, and why, is documented there and in
docs/guarantees.md ("The lease clock"). A lease can be lost at any moment
whatever these say: they only decide how soon the client stops on its
own; the gate's fence check is what makes a stale write harmless."""

from .core.limits import SECOND, Limits
from .errors import SettingsError

RENEW_FRACTION_DEFAULT = 1.0 / 3
RENEW_JITTER_DEFAULT = 0.1
CALL_TIMEOUT_DEFAULT = 2.0
EXPIRY_MARGIN_DEFAULT = 1.0
PROOF_MARGIN_DEFAULT = 0.5
PROOF_REFRESH_LEAD_DEFAULT = 1.0
QUERY_INTERVAL_DEFAULT = 0.5
ACQUIRE_MARGIN_DEFAULT = 2.0
TTL_DEFAULT = 15.0
DRAIN_MARGIN_DEFAULT = 1.0
ACQUIRE_LOST_MAX_DEFAULT = 8
LOCK_WAIT_CHUNK_DEFAULT = 25.0


def ns(seconds):
    """Seconds (a number) as integer nanoseconds."""
    return int(round(float(seconds) * SECOND))


class Options:
    """The client's limits (seconds; fractions for the two renewal ones).

    renew_fraction: renew when this share of the local life (TTL −
      expiry_margin) has passed since the last confirmed renewal was sent;
      1/3. renew_fraction × (1 + renew_jitter) must be at most 3/4.
    renew_jitter: spread renewals by ± this share of the interval; 0.1.
    call_timeout: a registry call without an answer after this long is
      lost, and a later answer is late; 2 s (an acquire adds its wait; a
      lease's calls use at most a quarter of its local life).
    expiry_margin: the local deadline is the send of the last confirmed
      renewal + TTL − this; 1 s, twice the registry's default skew bound.
    proof_margin: an envelope is built only while the status proof's
      validUntil − this is ahead; 0.5 s.
    proof_refresh_lead: refresh the status proof this long before it
      lapses (when a refresh can help); 1 s, raised to proof_margin + 0.1 s
      if not above proof_margin.
    query_interval: while OWNERSHIP_UNKNOWN, ask again after this long; 0.5 s.
    acquire_margin: an acquire whose answer never came is presumed over
      TTL + wait + this after its last send; 2 s.
    ttl_default: the TTL asked for when an acquire names none; 15 s.
    drain_margin: a release waits for unsettled envelopes' proofs plus
      this; 1 s.
    acquire_lost_max: an acquire stops (Unreachable) after this many calls
      in a row without an answer; 8.
    lock_wait_chunk: one call of Session.lock queues at most this long
      before asking again; 25 s.
    """

    FIELDS = ("renew_fraction", "renew_jitter", "call_timeout", "expiry_margin", "proof_margin",
              "proof_refresh_lead", "query_interval", "acquire_margin", "ttl_default", "drain_margin",
              "acquire_lost_max", "lock_wait_chunk")

    def __init__(self, renew_fraction=RENEW_FRACTION_DEFAULT, renew_jitter=RENEW_JITTER_DEFAULT,
                 call_timeout=CALL_TIMEOUT_DEFAULT, expiry_margin=EXPIRY_MARGIN_DEFAULT,
                 proof_margin=PROOF_MARGIN_DEFAULT, proof_refresh_lead=PROOF_REFRESH_LEAD_DEFAULT,
                 query_interval=QUERY_INTERVAL_DEFAULT, acquire_margin=ACQUIRE_MARGIN_DEFAULT,
                 ttl_default=TTL_DEFAULT, drain_margin=DRAIN_MARGIN_DEFAULT,
                 acquire_lost_max=ACQUIRE_LOST_MAX_DEFAULT, lock_wait_chunk=LOCK_WAIT_CHUNK_DEFAULT):
        self.renew_fraction, self.renew_jitter = float(renew_fraction), float(renew_jitter)
        self.call_timeout, self.expiry_margin = call_timeout, expiry_margin
        self.proof_margin = proof_margin
        if proof_refresh_lead <= proof_margin and proof_margin > 0:
            proof_refresh_lead = proof_margin + 0.1
        self.proof_refresh_lead, self.query_interval = proof_refresh_lead, query_interval
        self.acquire_margin, self.ttl_default, self.drain_margin = acquire_margin, ttl_default, drain_margin
        self.acquire_lost_max, self.lock_wait_chunk = acquire_lost_max, lock_wait_chunk

    def limits(self):
        """The limits the cores read, in nanoseconds."""
        return Limits(renew_fraction=self.renew_fraction, renew_jitter=self.renew_jitter,
                      call_timeout=ns(self.call_timeout), expiry_margin=ns(self.expiry_margin),
                      proof_margin=ns(self.proof_margin), proof_refresh_lead=ns(self.proof_refresh_lead),
                      query_interval=ns(self.query_interval), acquire_margin=ns(self.acquire_margin),
                      acquire_lost_max=self.acquire_lost_max, drain_margin=ns(self.drain_margin))

    def validate(self):
        """Raise SettingsError for options no lease can work with, naming
        the setting and the range that works (Options.Validate in Go)."""
        if self.ttl_default <= 0 or self.lock_wait_chunk <= 0:
            raise SettingsError("ttl_default/lock_wait_chunk", "%s/%s" % (self.ttl_default, self.lock_wait_chunk),
                                "above 0", "a time limit")
        self.limits().check()

    def ttl_min(self):
        """The shortest lease TTL these margins allow, in seconds: 2.0 with
        the defaults (client.TTLMin)."""
        return self.limits().ttl_min() / SECOND

    def __repr__(self):
        return "Options(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.FIELDS)
