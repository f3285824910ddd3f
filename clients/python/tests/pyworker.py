"""A Python worker of the real-process story (tests/realprocess.py): it
locks RESOURCE as the identity TOKEN names, writes VALUE through the gate
inside PostgreSQL with fencegate.pg.apply, and prints the outcome. With
FREEZE=1 it stops itself (SIGSTOP) with its envelope built and not yet
sent, as a paused machine stops, and goes on when the test resumes it
(SIGCONT).

Environment: FENCEGATE_URL, FENCEGATE_TOKEN, PG_DSN (the worker's own
role), RESOURCE, VALUE, TTL (seconds), FREEZE. PLAIN=1 is the negative
control: the same write, lease-only, into the unprotected table
report_plain, without the gate."""

import json
import os
import signal
import sys

import psycopg

import fencegate
import fencegate.pg


class Freezing:
    """A psycopg connection that stops the process just before its first
    statement goes out (the gate's, fencegate.apply: the envelope is built,
    the write not yet sent; lease-only, the INSERT itself)."""

    def __init__(self, conn, lease):
        self._conn, self._lease, self._frozen = conn, lease, False

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def execute(self, query, params=None):
        if not self._frozen:
            self._frozen = True
            print("frozen fence=%d pid=%d" % (self._lease.fence, os.getpid()), flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
            print("thawed state=%s lost=%s" % (self._lease.state, self._lease.lost.is_set()), flush=True)
        return self._conn.execute(query, params)


def main():
    resource, value = os.environ["RESOURCE"], os.environ["VALUE"]
    session = fencegate.Session(os.environ["FENCEGATE_URL"], token=os.environ["FENCEGATE_TOKEN"])
    payload = json.dumps({"resource": resource, "value": value}, sort_keys=True)
    with session.lock(resource, ttl=float(os.environ.get("TTL", "2"))) as lease:
        print("locked fence=%d" % lease.fence, flush=True)
        with psycopg.connect(os.environ["PG_DSN"], autocommit=True) as conn:
            c = Freezing(conn, lease) if os.environ.get("FREEZE") == "1" else conn
            if os.environ.get("PLAIN") == "1":
                # The negative control: the same write, lease-only (no gate).
                with conn.transaction():
                    c.execute("INSERT INTO report_plain (resource, value) VALUES (%s, %s)", (resource, value))
                print("outcome WRITTEN fence=%d (lease-only)" % lease.fence, flush=True)
                return 0
            try:
                fencegate.pg.apply(c, lease, payload, lambda c: c.execute(
                    "INSERT INTO report (resource, value) VALUES (%s, %s)", (resource, value)))
            except fencegate.GateRejection as e:
                print("outcome %s fence=%d highest=%s" % (e.outcome, lease.fence, e.highest_fence), flush=True)
                return 1
        print("outcome ACCEPTED fence=%d" % lease.fence, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
