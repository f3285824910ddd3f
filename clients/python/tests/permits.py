"""Proves Session.acquire(permits=N) and Session.lock(permits=N) against a
real registry (a counting semaphore, docs/api.md "Counting semaphores"):

- two sessions each take a permit of a semaphore of 2: two different
  slots of it (lease.resource is resource + "/_slot." + I), each with its
  own fence; the session keeps each under the semaphore's name;
- a third session, not waiting, gets BusyError; once a permit is released
  it gets that permit;
- a released permit leaves the session (session.lease(name) is None) so
  the same session can take the semaphore again: it is not AlreadyHeld;
- another N for the same name, and a plain acquire of the semaphore's
  name, are PermitsMismatchError, not retryable; N out of range is
  InvalidRequestError.

clients/python/permits_test.go serves the registry and runs this module
(FENCEGATE_TEST_REGISTRY, FENCEGATE_TEST_TOKEN_A/_B); without them it fails,
it does not skip.
"""

import os
import unittest

import fencegate

SEM = "pool/report-workers"


def env(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError("tests.permits needs %s (clients/python/permits_test.go sets it)" % name)
    return v


class Permits(unittest.TestCase):
    def session(self, token):
        return fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env(token))

    def test_semaphore(self):
        a, b, c = (self.session(tok) for tok in ("FENCEGATE_TEST_TOKEN_A", "FENCEGATE_TEST_TOKEN_B",
                                                 "FENCEGATE_TEST_TOKEN_B"))
        la = a.acquire(SEM, ttl=30, permits=2)
        lb = b.lock(SEM, ttl=30, timeout=10, permits=2)
        slots = {la.resource, lb.resource}
        self.assertEqual(slots, {SEM + "/_slot.0", SEM + "/_slot.1"})
        self.assertIs(a.lease(SEM), la)
        self.assertIs(b.lease(SEM), lb)
        self.assertIsNone(a.lease(la.resource))

        with self.assertRaises(fencegate.BusyError) as e:
            c.acquire(SEM, ttl=30, permits=2)
        self.assertEqual(e.exception.code, "BUSY")

        la.release()
        self.assertIsNone(a.lease(SEM), "a released permit must leave the session")
        lc = c.acquire(SEM, ttl=30, permits=2)
        self.assertEqual(lc.resource, la.resource)
        self.assertGreater(lc.fence, la.fence)  # the slot's own fence sequence
        lb.release()
        la2 = a.acquire(SEM, ttl=30, permits=2)  # not AlreadyHeld: the first permit left the session
        self.assertEqual(la2.resource, lb.resource)
        la2.release()
        lc.release()

    def test_permits_mismatch(self):
        a = self.session("FENCEGATE_TEST_TOKEN_A")
        a.acquire("pool/mismatch", ttl=30, permits=3).release()
        for kw in ({"permits": 2}, {}):
            with self.subTest(kw), self.assertRaises(fencegate.PermitsMismatchError) as e:
                a.acquire("pool/mismatch", ttl=30, **kw)
            self.assertEqual((e.exception.code, e.exception.status, e.exception.retryable),
                             ("PERMITS_MISMATCH", 409, False))
        a.acquire("plain/lock", ttl=30).release()
        with self.assertRaises(fencegate.PermitsMismatchError):
            a.acquire("plain/lock", ttl=30, permits=2)
        for bad in (65, -1, "2"):
            with self.subTest(bad), self.assertRaises(fencegate.InvalidRequestError):
                a.acquire("pool/bad", ttl=30, permits=bad)


if __name__ == "__main__":
    unittest.main()
