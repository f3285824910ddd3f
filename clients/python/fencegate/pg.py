"""Writing through the gate inside PostgreSQL (gate/pggate) with psycopg 3.

    with session.lock("jobs/report", ttl=10) as lease:
        fencegate.pg.apply(conn, lease, payload, lambda conn: conn.execute(
            "INSERT INTO report (resource, value) VALUES (%s, %s)", (lease.resource, value)))

apply calls fencegate.apply(envelope, payload_digest) and then the
caller's writes in one transaction of conn: the database decides on the
fence, the segment and the proofs under the resource's row lock, and the
writes land only if it accepts. Every other answer is an error of SQLSTATE
class FG (docs/formats.md), raised here as its GateRejection class
(StaleOwner for FG009, …); nothing of the write landed (Replayed: the
write already stands). psycopg is imported only when apply runs.
"""

import json

from .errors import GATE_REJECTIONS, GateRejection, OutcomeUnknown
from .lease import RolledBack

UNGUARDED = "FG020"
"""A protected table written outside an accepting apply: the caller's own
write, raised as psycopg raised it."""
OPERATOR_REFUSED = "FG021"
"""An operator action refused."""


def rejection(err):
    """The GateRejection a psycopg error stands for, or None when it is not
    one of the gate's answers (class FG, with its JSON detail)."""
    state = getattr(err, "sqlstate", None) or ""
    if not state.startswith("FG") or state in (UNGUARDED, OPERATOR_REFUSED):
        return None
    try:
        detail = json.loads(err.diag.message_detail or "")
    except ValueError:
        return None
    cls = GATE_REJECTIONS.get(detail.get("outcome") if isinstance(detail, dict) else None)
    if cls is None or cls.sqlstate != state:
        return None
    return cls("fencegate: %s: %s" % (cls.outcome, detail.get("reason", "")), detail)


def apply(conn, lease, payload, fn):
    """Write under lease through the gate inside PostgreSQL, in one
    transaction of conn (a psycopg 3 Connection with no transaction open;
    autocommit or not). payload (bytes, or str as UTF-8) is what the
    transaction writes: the envelope binds its digest. fn(conn) makes the
    business change; it runs only after the gate accepted, in the same
    transaction. The lease's next segment is used (1, 2, … as writes are
    accepted) and its answer settled.

    Returns the gate's receipt (a dict; in shadow mode the would-be
    outcome). Raises the GateRejection of the gate's answer (StaleOwner,
    SegmentGap, …, Replayed) with nothing written, after recording what
    the rejection records (fencegate.record: an alarm, a quarantine, a
    pause) in a transaction of its own; NotCertain before anything is sent
    when the lease's ownership is not certain; fn's own exception when fn
    failed (rolled back); OutcomeUnknown when the commit's answer was lost
    (settle it by operation ID: fencegate.receipt)."""
    import psycopg

    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("fencegate: pg.apply: the connection has a transaction open; "
                         "apply writes in a transaction of its own")

    def write(envelope, digest):
        rejected = None
        receipt = None
        try:
            with conn.transaction():
                try:
                    receipt = json.loads(conn.execute("SELECT fencegate.apply(%s, %s)::text",
                                                      (envelope, digest)).fetchone()[0])
                except psycopg.Error as e:
                    rejected = rejection(e)
                    raise
                try:
                    fn(conn)
                except BaseException as e:
                    raise RolledBack(e) from e
        except psycopg.Error as e:
            if rejected is None:
                raise OutcomeUnknown("fencegate: pg.apply: %s" % e) from e
            if rejected.detail.get("recorded"):
                record(conn, envelope, digest)  # the rollback took the alarm, quarantine or pause with it
            raise rejected from None
        return receipt

    return lease.send(payload, write)


def record(conn, envelope, digest):
    """Keep what a rejection records (its detail says "recorded": true) in
    a transaction of its own: the error rolled it back with the caller's.
    It never accepts; a rejection met again records nothing."""
    import psycopg

    try:
        with conn.transaction():
            conn.execute("SELECT fencegate.record(%s, %s)", (envelope, digest))
    except psycopg.Error as e:
        if rejection(e) is None:
            raise


__all__ = ["apply", "record", "rejection", "GateRejection"]
