"""Proves that a reader's lease never opens the gate inside PostgreSQL
for a write: a reader's grant (mode "read": resource NAME/_read) written
with fencegate.pg.apply is refused ReadGrant (READ_GRANT, SQLSTATE FG015)
and nothing lands, while the writer's lease on the same lock is accepted,
as is each member's lease of a lock set at its own resource.
The negative control cuts the gate's reader check out of
fencegate.authenticate (as gate/pggate/readgrant_test.go does; restored
after) and shows the same check failing: the reader's row lands.

clients/python/readgrant_test.go serves the registry, installs the gate
and runs this module (FENCEGATE_TEST_REGISTRY, FENCEGATE_TEST_TOKEN_A,
FENCEGATE_TEST_DSN_A: the role mapped to identity A,
FENCEGATE_TEST_DSN_ADMIN); without them it fails, it does not skip.
"""

import os
import unittest

import psycopg

import fencegate
import fencegate.pg

READ_CHECK = "  IF octet_length(g.resource) > 6 AND right(g.resource, 6) = '/_read' THEN"


def env(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError("tests.readgrant needs %s (clients/python/readgrant_test.go sets it)" % name)
    return v


def rows(resource):
    with psycopg.connect(env("FENCEGATE_TEST_DSN_ADMIN"), autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM report WHERE resource = %s", (resource,)).fetchone()[0]


def reader_write(name):
    """Write through the gate under a reader's lease on name, then under
    the writer's; return the failures seen (none: the reader's write is
    ReadGrant with nothing written, the writer's is accepted)."""
    s = fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env("FENCEGATE_TEST_TOKEN_A"))
    failures = []
    with psycopg.connect(env("FENCEGATE_TEST_DSN_A"), autocommit=True) as conn:
        reader = s.acquire(name, ttl=5, mode="read")
        try:
            fencegate.pg.apply(conn, reader, b"reader", lambda c: c.execute(
                "INSERT INTO report (resource, value) VALUES (%s, %s)", (reader.resource, "reader")))
            failures.append("the reader's write was accepted")
        except fencegate.ReadGrant as e:
            if (e.outcome, e.sqlstate) != ("READ_GRANT", "FG015"):
                failures.append("refused as %s %s" % (e.outcome, e.sqlstate))
        reader.release(drain=False)
        if rows(reader.resource) or rows(name):
            failures.append("the reader's write left %d rows" % (rows(reader.resource) + rows(name)))
        writer = s.lock(name, ttl=5, timeout=10)
        fencegate.pg.apply(conn, writer, b"writer", lambda c: c.execute(
            "INSERT INTO report (resource, value) VALUES (%s, %s)", (name, "writer")))
        writer.release(drain=False)
        if rows(name) != 1:
            failures.append("the writer's row is not there")
    return failures


class ReadGrantAtPostgres(unittest.TestCase):
    def test_reader_grant_refused(self):
        self.assertEqual(reader_write("rwg/orders"), [])

    def test_set_members_each_write_through_their_gate(self):
        s = fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env("FENCEGATE_TEST_TOKEN_A"))
        members = ["rwg/set/b", "rwg/set/a"]
        with psycopg.connect(env("FENCEGATE_TEST_DSN_A"), autocommit=True) as conn, s.lock_set(members, ttl=5,
                                                                                                 timeout=10) as ls:
            for m in ls.members:
                lease = ls.lease(m)
                receipt = fencegate.pg.apply(conn, lease, m.encode(), lambda c, m=m: c.execute(
                    "INSERT INTO report (resource, value) VALUES (%s, %s)", (m, "member")))
                self.assertEqual((receipt["resource"], receipt["fenceToken"]), (m, lease.fence))
        self.assertEqual([rows(m) for m in sorted(members)], [1, 1])

    def test_control_without_the_gates_reader_check(self):
        with psycopg.connect(env("FENCEGATE_TEST_DSN_ADMIN"), autocommit=True) as admin:
            sig = "fencegate.authenticate(fencegate.envelope_t, text, text[])"
            orig = admin.execute("SELECT pg_get_functiondef(%s::regprocedure)", (sig,)).fetchone()[0]
            start = orig.index(READ_CHECK)
            end = orig.index("  END IF;\n", start) + len("  END IF;\n")
            admin.execute(orig[:start] + orig[end:])
            try:
                failures = reader_write("rwg/control")
            finally:
                admin.execute(orig)
        self.assertIn("the reader's write was accepted", failures)


if __name__ == "__main__":
    unittest.main()
