#!/usr/bin/env python3
"""A Python worker that writes to PostgreSQL under a fencegate lease.

    PYTHONPATH=clients/python FENCEGATE_TOKEN=fencegate-dev-token \\
      PG_DSN=postgres://report_worker@localhost/app VALUE=42 python3 examples/python/worker.py

It takes the lease on RESOURCE with the Python client (clients/python;
`pip install ./clients/python`, or PYTHONPATH as above), waiting its turn
behind other holders, and writes one row of report through the gate
inside PostgreSQL: fencegate.pg.apply runs fencegate.apply(envelope,
payload_digest) and the INSERT in one transaction, so the row lands only
if the database accepts the lease's fence. Leaving the with-block
releases the lease.

Environment: FENCEGATE_REGISTRY (default http://127.0.0.1:7420, `fencegate
serve --dev`'s address); FENCEGATE_TOKEN, the identity's bearer token;
PG_DSN, the libpq connection string of the worker's own login role
(granted fencegate_writer and mapped to the identity its grants name:
fencegate gate enroll --role ROLE --identity ID); VALUE, what to write;
RESOURCE (default jobs/report); TTL in seconds (default 10).

It prints the gate's outcome: ACCEPTED, or the rejection (STALE_OWNER,
SQLSTATE FG009, when a newer owner has written: nothing of this write
lands). Needs psycopg 3 (Debian: python3-psycopg).
"""
import json
import os
import sys

import psycopg

import fencegate
import fencegate.pg


def main():
    resource, value = os.environ.get("RESOURCE", "jobs/report"), os.environ["VALUE"]
    session = fencegate.Session(os.environ.get("FENCEGATE_REGISTRY", "http://127.0.0.1:7420"),
                                token=os.environ["FENCEGATE_TOKEN"])
    # What the transaction writes: the envelope binds its digest.
    payload = json.dumps({"resource": resource, "value": value}, sort_keys=True)
    with session.lock(resource, ttl=float(os.environ.get("TTL", "10"))) as lease:
        print("lease fence=%d" % lease.fence, flush=True)
        with psycopg.connect(os.environ["PG_DSN"], autocommit=True) as conn:
            try:
                fencegate.pg.apply(conn, lease, payload, lambda conn: conn.execute(
                    "INSERT INTO report (resource, value) VALUES (%s, %s)", (resource, value)))
            except fencegate.GateRejection as e:  # nothing of the write landed
                print("outcome", e.outcome, flush=True)
                return 1
        print("outcome ACCEPTED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
