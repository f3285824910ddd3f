"""The pure timing of one lease (client/core/schedule.go), rule for rule.

All instants are integers in nanoseconds on the client's clock, except
proof_until, which is the registry's validUntil: it is only compared
after subtracting a margin that covers the skew bound.

The clock (docs/guarantees.md, "The lease clock"): a confirmation of a
renewal sent at s gives the lease the local life L = TTL − expiry margin:
deadline = s + L; the next renewal goes at s + renew_fraction × L × (1 ±
renew_jitter), and its answer is timely only within a quarter of L, so a
renewal answered in time always lands before the deadline.
"""

from . import machine

DUE_NOTHING = "nothing"
DUE_DEADLINE = "deadline"   # the local deadline passed: stop, then query
DUE_RENEW = "renew"         # renew the lease (also refreshes the proof)
DUE_REFRESH = "refresh"     # only the status proof needs refreshing
DUE_QUERY = "query"         # OWNERSHIP_UNKNOWN: ask the registry again


class Schedule:
    """deadline: no new effects at or after it; renew_at: the next renewal;
    proof_until: how long the HELD evidence lasts (registry clock);
    proof_capped: a refresh since the last renewal moved the proof by less
    than proof_refresh_lead − proof_margin, so no refresh is due before
    the next renewal; query_at: the next query while unknown."""

    __slots__ = ("deadline", "renew_at", "proof_until", "proof_capped", "query_at")

    def __init__(self, deadline, renew_at, proof_until, proof_capped=False, query_at=0):
        self.deadline, self.renew_at, self.proof_until = deadline, renew_at, proof_until
        self.proof_capped, self.query_at = proof_capped, query_at

    @classmethod
    def confirmed(cls, o, sent, ttl, proof_until, jitter):
        """The schedule after the registry confirmed the grant HELD in
        answer to a renewal (or acquire) sent at sent; jitter in [-1, 1)."""
        life = o.life(ttl)
        interval = int(float(life) * o.renew_fraction * (1 + o.renew_jitter * jitter))
        return cls(sent + life, sent + interval, proof_until)

    def refreshed(self, o, proof_until):
        """Keep the deadline and renewal time, take newer evidence lasting
        until proof_until; evidence that moved less than
        proof_refresh_lead − proof_margin marks the proof capped."""
        capped = self.proof_capped or proof_until - self.proof_until < o.proof_refresh_lead - o.proof_margin
        return Schedule(self.deadline, self.renew_at, proof_until, capped, self.query_at)

    def proof_usable(self, o, now):
        """Whether the status proof may still be sent at now."""
        return now < self.proof_until - o.proof_margin

    def _refresh_at(self, o):
        useful = not self.proof_capped and self.proof_until - o.proof_margin < self.deadline
        return self.proof_until - o.proof_refresh_lead, useful

    def check(self, o, state, now):
        """What is due at now in state, and when to look again (None: never).
        The deadline is checked in every state that lets the client produce
        effects, RENEWING included."""
        if state in (machine.HELD, machine.RENEWING):
            if now >= self.deadline:
                return DUE_DEADLINE, now
            if state == machine.RENEWING:
                return DUE_NOTHING, self.deadline
            refresh_at, refresh = self._refresh_at(o)
            if now >= self.renew_at:
                return DUE_RENEW, now
            if refresh and now >= refresh_at:
                return DUE_REFRESH, now
            if refresh:
                return DUE_NOTHING, min(self.deadline, self.renew_at, refresh_at)
            return DUE_NOTHING, min(self.deadline, self.renew_at)
        if state == machine.UNKNOWN:
            if now >= self.query_at:
                return DUE_QUERY, now
            return DUE_NOTHING, self.query_at
        return DUE_NOTHING, None
