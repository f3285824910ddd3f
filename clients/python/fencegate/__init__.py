"""fencegate's Python client: leases with fence tokens that a gate checks.

    import fencegate

    session = fencegate.Session("http://127.0.0.1:7420", token="fencegate-dev-token")
    with session.lock("jobs/report", ttl=10) as lease:
        envelope = lease.envelope(1, fencegate.payload_digest(payload))
        ...                      # send it with the write; the gate checks it
    # or, against the gate inside PostgreSQL: fencegate.pg.apply(conn, lease, payload, fn)

    with session.lock_set(["acct/a", "acct/b"], ttl=10) as ls:   # every member or none, one lease
        ls.lease("acct/a").envelope(...)                          # each member's own grant, for its gate
    reader = session.lock("docs/spec", mode="read")               # readers share; downgrade(lease) keeps the fence

The lease machine is the Go SDK's, step for step (it runs the Go SDK's
lease scenario files: client/testdata/lease): the same states, renewal
schedule, margins, shortest TTL, lost-answer recovery and release drain.
Standard library only; fencegate.pg needs psycopg 3.
"""

from . import pg
from .election import Election, Leader
from .errors import (AcquirePending, AlreadyHeld, BadAnswer, BadProof, BindingMismatch, BusyError, ConflictError,
                     CorruptError, EpochRevoked, EpochRevokedError, FenceRangeError, FenceRegression,
                     FencegateError, GateRejection, IdentityMismatch, InvalidRequestError, LeaseBrokenError,
                     LeaseExpiredError, Malformed, NotCertain, NotHeld, NotHolderError, OutcomeUnknown, PolicyStale,
                     ProofExpired, ProofStale, Quarantined, ReadGrant, Refused, RegistryError, Replayed, RequestMismatchError,
                     RequestNotFoundError, ResourcePaused, RootMismatch, SegmentGap, SettingsError, StaleOwner,
                     StoreFullError, PermitsMismatchError, TTLOutOfRangeError, TTLSettingsError, UnavailableError, Unreachable, WaitersFullError,
                     WaitTimeoutError)
from .grant import operation_root, payload_digest
from .lease import Lease, LockSet, LostEvent, RolledBack
from .options import Options
from .session import Session, Timeout

__version__ = "0.1.0"

TTL_MIN = Options().ttl_min()
"""The shortest TTL the default margins allow, in seconds (client.TTLMin): 2.0."""

__all__ = [
    "Session", "Lease", "LockSet", "LostEvent", "Election", "Leader", "Options", "Timeout", "RolledBack", "payload_digest",
    "operation_root", "TTL_MIN",
    "FencegateError", "OutcomeUnknown", "BadAnswer", "Refused", "NotCertain", "ProofStale", "SettingsError",
    "TTLSettingsError", "AcquirePending", "AlreadyHeld", "Unreachable",
    "RegistryError", "InvalidRequestError", "TTLOutOfRangeError", "RequestMismatchError", "BusyError",
    "WaitTimeoutError", "WaitersFullError", "NotHolderError", "LeaseExpiredError", "LeaseBrokenError",
    "EpochRevokedError", "RequestNotFoundError", "ConflictError", "UnavailableError", "CorruptError",
    "FenceRangeError", "StoreFullError", "PermitsMismatchError",
    "GateRejection", "Replayed", "Malformed", "BadProof", "BindingMismatch", "IdentityMismatch", "NotHeld",
    "EpochRevoked", "PolicyStale", "ProofExpired", "StaleOwner", "SegmentGap", "RootMismatch", "Quarantined",
    "FenceRegression", "ResourcePaused", "ReadGrant",
]
