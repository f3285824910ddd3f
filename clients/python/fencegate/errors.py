"""The client's exceptions: one class per stable code to branch on.

Three families, as in the Go SDK:

- ``RegistryError`` and its subclasses: the registry's definite answers,
  one class per stable code of docs/api.md (``BusyError`` for BUSY, …).
  ``UnavailableError`` (UNAVAILABLE) means the outcome is unknown.
- ``GateRejection`` and its subclasses: the gate's answer to a write, one
  class per outcome code (``StaleOwner`` for STALE_OWNER, …; ``Replayed``
  for REPLAYED, whose write already stands).
- The client's own: ``OutcomeUnknown`` (an answer was lost: the call may
  or may not have been applied), ``Refused`` (the HTTP layer refused the
  call before the registry acted), ``NotCertain`` (the lease does not let
  the client produce effects now), ``ProofStale``, ``SettingsError``,
  ``AcquirePending``, ``AlreadyHeld``, ``Unreachable``, ``BadAnswer``.
"""


class FencegateError(Exception):
    """Every exception this package raises on purpose."""


# --- the client's own ------------------------------------------------------


class OutcomeUnknown(FencegateError):
    """A call's answer was lost (a timeout, a reset connection, a server
    error without a definite code, an unreadable answer): it may or may
    not have been applied. A write in this state is MUTATION_UNKNOWN:
    settle it by operation ID against the resource's receipts, never by
    sending it blindly again."""


class BadAnswer(OutcomeUnknown):
    """The registry's answer is not what the API promises (it does not
    parse strictly, or it is about another grant or request)."""


class Refused(FencegateError):
    """The HTTP layer refused the call definitely, before the registry
    acted on it: a bad request, no or wrong credentials, a resource the
    identity may not use. ``code`` is the stable code, ``status`` the HTTP
    status."""

    def __init__(self, code, message, status=0):
        super().__init__("fencegate: refused: %s (%d): %s" % (code, status, message))
        self.code, self.message, self.status = code, message, status


class NotCertain(FencegateError):
    """The lease does not let the client produce effects now: its state is
    not HELD or RENEWING, its local deadline passed, or it is releasing.
    ``state`` is the lease's state, ``reason`` why. Do not write."""

    def __init__(self, lease, state, reason):
        super().__init__("fencegate: not certain: lease %s is %s: %s" % (lease, state, reason))
        self.lease, self.state, self.reason = lease, state, reason


class ProofStale(FencegateError):
    """The lease's status proof is too close to its validUntil to send;
    the lease refreshes it on its own schedule: ask again shortly."""


class SettingsError(FencegateError, ValueError):
    """A setting (an option, a lease's TTL) cannot work; nothing was sent.
    ``setting`` names it, ``value`` is what was given, ``want`` the range
    that works and ``why`` where the range comes from."""

    def __init__(self, setting, value, want, why):
        Exception.__init__(self, "fencegate: %s %s cannot work: want %s (%s)" % (setting, value, want, why))
        self.setting, self.value, self.want, self.why = setting, value, want, why


class AcquirePending(FencegateError):
    """An earlier acquire of the resource has no final answer yet and asked
    for something else (or is still running): its request ID is kept until
    it has one, or until ``reusable_at`` (seconds on the session's clock)
    when it is presumed over. A second request ID before then could make
    the registry grant the resource twice to one worker."""

    def __init__(self, resource, request_id, reusable_at):
        super().__init__("fencegate: acquire pending: resource %s: request %s has no final answer; "
                         "a new request ID is allowed after %.3f s (session clock)" % (resource, request_id, reusable_at))
        self.resource, self.request_id, self.reusable_at = resource, request_id, reusable_at


class AlreadyHeld(FencegateError):
    """The session already holds a live lease on the resource: it never
    runs two identities for one resource at once."""


class Unreachable(OutcomeUnknown):
    """``acquire_lost_max`` calls in a row got no answer. The request ID
    stays pending: a later acquire with the same parameters continues it."""


# --- the registry's answers --------------------------------------------------


class RegistryError(FencegateError):
    """A definite answer of the registry with a stable ``code`` (docs/api.md);
    ``status`` is the HTTP status, ``message`` the registry's words.
    ``retryable`` is true for the codes the registry answers with
    Retry-After (WAITERS_FULL, CONFLICT, UNAVAILABLE, STORE_FULL): the same
    call may succeed shortly, with the same request ID for an acquire. It
    says nothing of what the lease machine does: an acquire retries only
    CONFLICT and UNAVAILABLE by itself, as the Go SDK does."""

    code = ""
    retryable = False

    def __init__(self, message, status=0, code=None):
        if code:
            self.code = code
        super().__init__("fencegate: registry: %s: %s" % (self.code, message))
        self.message, self.status = message, status


class InvalidRequestError(RegistryError):
    """INVALID: a request field fails its rule."""
    code = "INVALID"


class TTLOutOfRangeError(RegistryError):
    """TTL_OUT_OF_RANGE: the TTL is outside the registry's range."""
    code = "TTL_OUT_OF_RANGE"


class RequestMismatchError(RegistryError):
    """REQUEST_MISMATCH: the request ID was used with other parameters."""
    code = "REQUEST_MISMATCH"


class BusyError(RegistryError):
    """BUSY: the resource is held and the acquire asked not to wait.
    ``busy`` is the registry's detail: who holds it, since when, how many
    wait (a dict, or None)."""
    code = "BUSY"

    def __init__(self, message, status=0, code=None, busy=None):
        super().__init__(message, status, code)
        self.busy = busy


class WaitTimeoutError(BusyError):
    """WAIT_TIMEOUT: the acquire waited its whole wait without the lease."""
    code = "WAIT_TIMEOUT"


class WaitersFullError(RegistryError):
    """WAITERS_FULL: the resource has the most waiters the registry allows;
    nothing was queued. Retryable: try again shortly."""
    code = "WAITERS_FULL"
    retryable = True


class NotHolderError(RegistryError):
    """NOT_HOLDER: the lease is not (or no longer) this caller's."""
    code = "NOT_HOLDER"


class LeaseExpiredError(RegistryError):
    """LEASE_EXPIRED: the lease expired by the registry's clock."""
    code = "LEASE_EXPIRED"


class LeaseBrokenError(RegistryError):
    """LEASE_BROKEN: an operator broke the lease."""
    code = "LEASE_BROKEN"


class EpochRevokedError(RegistryError):
    """EPOCH_REVOKED (the registry's): the grant's issuer epoch is revoked."""
    code = "EPOCH_REVOKED"


class RequestNotFoundError(RegistryError):
    """NOT_FOUND: no grant is known under that request ID or digest."""
    code = "NOT_FOUND"


class ConflictError(RegistryError):
    """CONFLICT: too much contention; nothing changed, try again."""
    code = "CONFLICT"
    retryable = True


class UnavailableError(RegistryError, OutcomeUnknown):
    """UNAVAILABLE: the store could not be reached: the outcome is unknown
    (retry with the same request ID, never a new one)."""
    code = "UNAVAILABLE"
    retryable = True


class CorruptError(RegistryError):
    """CORRUPT: a stored value failed its checks; nothing was issued."""
    code = "CORRUPT"


class FenceRangeError(RegistryError):
    """FENCE_RANGE: the registry needs its fence range bumped."""
    code = "FENCE_RANGE"


class StoreFullError(RegistryError):
    """STORE_FULL (HTTP 507, with Retry-After): the registry's store is
    out of space (etcd's NOSPACE alarm, or the registry's mark at 90% of
    its quota). A definite refusal that changed nothing: no grant was
    made, and a renewal or release so refused leaves the lease as it was.
    Retryable: grants resume by themselves once space is back
    (docs/operations.md, "What happens at NOSPACE")."""
    code = "STORE_FULL"
    retryable = True


class PermitsMismatchError(RegistryError):
    """PERMITS_MISMATCH (HTTP 409): the acquire names another number of
    permits than the resource was first used with. A semaphore's N is
    fixed by its first acquire, and a plain lock (no permits) and a
    semaphore never share a name: asking again with the same N is refused
    again; use the resource's N, or another name."""
    code = "PERMITS_MISMATCH"


REGISTRY_ERRORS = {c.code: c for c in (
    InvalidRequestError, TTLOutOfRangeError, RequestMismatchError, BusyError, WaitTimeoutError, WaitersFullError,
    NotHolderError, LeaseExpiredError, LeaseBrokenError, EpochRevokedError, RequestNotFoundError, ConflictError,
    UnavailableError, CorruptError, FenceRangeError, StoreFullError, PermitsMismatchError)}
"""Each registry code (wire.RegistryErrors) to its class; a code missing
here comes back as OutcomeUnknown. TestPythonRegistryErrorsAreTheRegistrys
(python_test.go) holds it to wire.RegistryErrors."""


class TTLSettingsError(SettingsError, TTLOutOfRangeError):
    """A lease TTL shorter than the client's margins allow (``ttl_min``),
    refused before anything is sent; it is also a ``TTLOutOfRangeError``,
    as the registry's own refusal of a TTL outside its range is."""

    code = "TTL_OUT_OF_RANGE"

    def __init__(self, value, want, why):
        SettingsError.__init__(self, "TTL", value, want, why)
        self.message, self.status = str(self), 0


# --- the gate's answers ------------------------------------------------------


class GateRejection(FencegateError):
    """The gate's refusal of a write (docs/api.md, "The gate's envelope"):
    ``outcome`` is the stable code, ``sqlstate`` the gate inside
    PostgreSQL's SQLSTATE (class FG), ``detail`` its JSON detail (a dict:
    fenceToken, highestFence, reason, recorded, …). Nothing of the write
    landed, except for ``Replayed``, whose write already stands."""

    outcome = ""
    sqlstate = ""

    def __init__(self, message, detail=None):
        super().__init__(message)
        self.detail = detail or {}

    @property
    def reason(self):
        """The gate's reason, in words."""
        return self.detail.get("reason", "")

    @property
    def fence_token(self):
        """The refused write's fence."""
        return self.detail.get("fenceToken")

    @property
    def highest_fence(self):
        """The highest fence the resource had accepted."""
        return self.detail.get("highestFence")


def _rejection(name, outcome, sqlstate, doc):
    return type(name, (GateRejection,), {"outcome": outcome, "sqlstate": sqlstate, "__doc__": doc})


Replayed = _rejection("Replayed", "REPLAYED", "FG100",
                      "REPLAYED: this very write was accepted before; it stands (the receipt is in detail['receipt']).")
Malformed = _rejection("Malformed", "MALFORMED", "FG001", "MALFORMED: the envelope does not parse.")
BadProof = _rejection("BadProof", "BAD_PROOF", "FG002", "BAD_PROOF: a proof does not verify under the gate's keys.")
BindingMismatch = _rejection("BindingMismatch", "BINDING_MISMATCH", "FG003",
                             "BINDING_MISMATCH: the write does not match its grant (resource, lease, root, fence, payload digest).")
IdentityMismatch = _rejection("IdentityMismatch", "IDENTITY_MISMATCH", "FG004",
                              "IDENTITY_MISMATCH: the caller is not the grant's owner.")
NotHeld = _rejection("NotHeld", "NOT_HELD", "FG005", "NOT_HELD: the evidence does not prove the grant HELD now.")
EpochRevoked = _rejection("EpochRevoked", "EPOCH_REVOKED", "FG006", "EPOCH_REVOKED: the grant's issuer epoch is revoked.")
PolicyStale = _rejection("PolicyStale", "POLICY_STALE", "FG007",
                         "POLICY_STALE: the grant's policy generation is below the resource's minimum.")
ProofExpired = _rejection("ProofExpired", "PROOF_EXPIRED", "FG008", "PROOF_EXPIRED: the status proof is too old.")
StaleOwner = _rejection("StaleOwner", "STALE_OWNER", "FG009",
                        "STALE_OWNER: a newer owner (a higher fence) has written; nothing of this write landed.")
SegmentGap = _rejection("SegmentGap", "SEGMENT_GAP", "FG010", "SEGMENT_GAP: a segment is missing before this one.")
RootMismatch = _rejection("RootMismatch", "ROOT_MISMATCH", "FG011",
                          "ROOT_MISMATCH: this fence's segments belong to another operation.")
Quarantined = _rejection("Quarantined", "QUARANTINED", "FG012",
                         "QUARANTINED: this segment was accepted before with another payload.")
FenceRegression = _rejection("FenceRegression", "FENCE_REGRESSION", "FG013",
                             "FENCE_REGRESSION: the registry went backwards; the resource is paused.")
ResourcePaused = _rejection("ResourcePaused", "RESOURCE_PAUSED", "FG014", "RESOURCE_PAUSED: an operator must resume the resource.")
ReadGrant = _rejection("ReadGrant", "READ_GRANT", "FG015",
                       "READ_GRANT: a read/write lock reader's grant never opens a gate for a write.")

GATE_REJECTIONS = {c.outcome: c for c in (
    Replayed, Malformed, BadProof, BindingMismatch, IdentityMismatch, NotHeld, EpochRevoked, PolicyStale,
    ProofExpired, StaleOwner, SegmentGap, RootMismatch, Quarantined, FenceRegression, ResourcePaused, ReadGrant)}
"""Each gate outcome code but ACCEPTED to its class."""

NOT_FINAL_OUTCOMES = frozenset(("SEGMENT_GAP", "RESOURCE_PAUSED", "NOT_HELD", ""))
"""The answers a copy of the write may still overturn (gate.Outcome.Final
is false): SEGMENT_GAP (the missing segment may arrive), RESOURCE_PAUSED
(an operator may resume), NOT_HELD (a failed status query may succeed).
Every other answer is final: settling it lets a release skip the drain."""


def is_final(outcome):
    """Whether no copy of a write answered ``outcome`` can ever escape it."""
    return outcome not in NOT_FINAL_OUTCOMES
