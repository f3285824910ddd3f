"""The lease state machine (client/core/state.go), transition for transition.

States are named exactly as the specification names them. Only HELD and
RENEWING let the client produce new effects. A (state, event) pair not in
TRANSITIONS is a programmer error: step raises AssertionError.
"""

REQUESTED = "REQUESTED"
"""An acquire is in flight or its answer was lost; the request ID is kept."""
HELD = "HELD"
"""The registry confirmed this grant HELD and the local deadline has not passed."""
RENEWING = "RENEWING"
"""A renewal or status refresh is in flight; ownership is still certain."""
UNKNOWN = "OWNERSHIP_UNKNOWN"
"""A renewal or query result is uncertain (lost, late, or the local deadline
passed). No new effects; left only on the registry's word."""
EXPIRED = "EXPIRED"
"""The registry confirmed the grant is no longer held. Terminal."""
RELEASED = "RELEASED"
"""A voluntary release succeeded. Terminal."""

STATES = (REQUESTED, HELD, RENEWING, UNKNOWN, EXPIRED, RELEASED)

# Events: an answer (or its absence) from the registry, or a local timer.
EV_ACQUIRE_OK = "AcquireOK"
EV_ACQUIRE_LOST = "AcquireLost"
EV_RENEW_DUE = "RenewDue"
EV_RENEW_OK = "RenewOK"
EV_RENEW_LOST = "RenewLost"
EV_RENEW_LATE = "RenewLate"
EV_RENEW_REFUSED = "RenewRefused"
EV_DEADLINE = "Deadline"
EV_QUERY_HELD = "QueryHeld"
EV_QUERY_EXPIRED = "QueryExpired"
EV_QUERY_UNAVAILABLE = "QueryUnavailable"
EV_RELEASE_OK = "ReleaseOK"
EV_RELEASE_LOST = "ReleaseLost"
EV_RELEASE_REFUSED = "ReleaseRefused"

TRANSITIONS = {
    REQUESTED: {EV_ACQUIRE_OK: HELD, EV_ACQUIRE_LOST: REQUESTED},
    HELD: {EV_RENEW_DUE: RENEWING, EV_DEADLINE: UNKNOWN, EV_RELEASE_OK: RELEASED, EV_RELEASE_LOST: UNKNOWN,
           EV_RELEASE_REFUSED: EXPIRED},
    RENEWING: {EV_RENEW_OK: HELD, EV_RENEW_LOST: UNKNOWN, EV_RENEW_LATE: UNKNOWN, EV_RENEW_REFUSED: EXPIRED,
               EV_DEADLINE: UNKNOWN},
    UNKNOWN: {EV_QUERY_HELD: HELD, EV_QUERY_EXPIRED: EXPIRED, EV_QUERY_UNAVAILABLE: UNKNOWN,
              EV_RELEASE_OK: RELEASED, EV_RELEASE_LOST: UNKNOWN, EV_RELEASE_REFUSED: EXPIRED},
    EXPIRED: {},
    RELEASED: {},
}
"""The whole machine: state → event → state."""


def certain(state):
    """Whether state lets the client produce new effects."""
    return state in (HELD, RENEWING)


def terminal(state):
    """Whether no event can leave state."""
    return state in (EXPIRED, RELEASED)


class Effects:
    """What the shell must do after a transition, from the (from, to) pair
    alone: cancel (ownership stopped being certain), renew (it became
    certain again: a fresh ``lost`` event), query (ask the registry at
    once), done (the lease ended)."""

    __slots__ = ("cancel", "renew", "query", "done")

    def __init__(self, frm, to):
        self.cancel = certain(frm) and not certain(to)
        self.renew = not certain(frm) and certain(to)
        self.query = to == UNKNOWN and frm != UNKNOWN
        self.done = terminal(to)


class Machine:
    """The pure lease state machine: no clock, no I/O, no locks."""

    __slots__ = ("state",)

    def __init__(self, state=REQUESTED):
        self.state = state

    def step(self, ev):
        """Apply ev; return the new state and its Effects. An illegal
        transition is a programmer error."""
        frm = self.state
        to = TRANSITIONS[frm].get(ev)
        assert to is not None, "fencegate: illegal transition %s --%s-->" % (frm, ev)
        self.state = to
        return to, Effects(frm, to)
