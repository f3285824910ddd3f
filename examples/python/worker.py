#!/usr/bin/env python3
"""A Python worker that writes to PostgreSQL under a fencegate lock.

Run it under `fencegate lock`, which holds the lease and hands out the
envelope of each write:

    fencegate lock jobs/report --registry URL --token TOKEN -- python3 worker.py

Environment: PG_DSN, the libpq connection string of the worker's own
login role (granted fencegate_writer and mapped to the workload identity
its grants name: fencegate gate enroll --role ROLE --identity ID); VALUE,
what to write; FENCEGATE_BIN, the fencegate binary (fencegate lock sets
it to its own; default: fencegate on PATH); HOLD=true stops the worker between taking its envelope and
writing until a line arrives on stdin, ignoring the wrapper's SIGTERM (a
pause of its machine, in tests: a paused process sees no signal, and
what must stop its late write is the gate).

The write is one transaction: fencegate.apply(envelope, payload_digest)
first, then the worker's own INSERT. Every rejection is an error of
SQLSTATE class FG (FG009 is STALE_OWNER, ...; docs/formats.md lists them)
that aborts the transaction, so nothing of a stale write lands. Needs
psycopg 3 (Debian: python3-psycopg) and nothing of fencegate's.
"""
import hashlib
import json
import os
import signal
import subprocess
import sys

import psycopg

FG = os.environ.get("FENCEGATE_BIN", "fencegate")


def payload_digest(resource, value):
    """The digest of what the transaction writes: the envelope names it."""
    payload = json.dumps({"resource": resource, "value": value}, sort_keys=True).encode()
    return "sha256:" + hashlib.sha256(payload).hexdigest()


def write(dsn, envelope, digest, resource, value):
    """Write value under the envelope; return the gate's outcome code."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            with conn.transaction():
                answer = conn.execute("SELECT fencegate.apply(%s, %s)", (envelope, digest)).fetchone()[0]
                conn.execute("INSERT INTO report (resource, value) VALUES (%s, %s)", (resource, value))
            return answer["outcome"]  # ACCEPTED, or what shadow mode let through
        except psycopg.Error as e:
            if not (e.sqlstate or "").startswith("FG"):
                raise
            detail = json.loads(e.diag.message_detail or "{}")
            if detail.get("recorded"):
                # The rollback took the alarm, quarantine or pause with it.
                with conn.transaction():
                    conn.execute("SELECT fencegate.record(%s, %s)", (envelope, digest))
            return detail.get("outcome", e.sqlstate)


def main():
    resource, value = os.environ["FENCEGATE_RESOURCE"], os.environ["VALUE"]
    digest = payload_digest(resource, value)
    got = subprocess.run([FG, "envelope", "--seq", "1", "--payload-digest", digest], capture_output=True, text=True)
    if got.returncode != 0:
        print("no envelope (do not write):", got.stderr.strip(), flush=True)
        return 3
    envelope = got.stdout
    print(f"envelope fence={json.loads(envelope)['fenceToken']} pid={os.getpid()}", flush=True)
    if os.environ.get("HOLD") == "true":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stdin.readline()
    outcome = write(os.environ["PG_DSN"], envelope, digest, resource, value)
    print("outcome", outcome, flush=True)
    subprocess.run([FG, "envelope", "settle", "--seq", "1", "--outcome", outcome], capture_output=True)
    return 0 if outcome in ("ACCEPTED", "REPLAYED") else 1


if __name__ == "__main__":
    sys.exit(main())
