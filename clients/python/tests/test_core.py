"""Proves the Python cores' rules beyond the lease scenarios, as the Go
SDK's: the limits (the shortest TTL, 2 s with the defaults, refused below
with the range that works; settings no lease can work with refused) and
the acquire core (a lost answer asked for by the same request ID, then the
same acquire resent while the registry has none; a grant that already
ended is the only cue for a new ID; a lock keeps its ID across
WAIT_TIMEOUTs; a run of lost answers ends as Unreachable, the ID kept),
and what an acquire sends and raises: permits only when given, the
registry's refusals (STORE_FULL, PERMITS_MISMATCH) as their classes, final
(tests/permits.py runs permits against a real registry)."""

import json
import unittest

from fencegate.core import machine
from fencegate.core.acquire import AcquireCore
from fencegate.core.lease import CALL_ACQUIRE, CALL_QUERY_REQUEST, Answer, Lost
from fencegate.core.limits import MS, SECOND
from fencegate.errors import (BadAnswer, ConflictError, InvalidRequestError, OutcomeUnknown, PermitsMismatchError,
                              RegistryError, RequestNotFoundError, SettingsError, StoreFullError, TTLOutOfRangeError,
                              TTLSettingsError, Unreachable, WaitTimeoutError)
from fencegate.grant import Grant, Issued, Status, operation_root
from fencegate.options import Options
from fencegate.session import Session
from fencegate.transport import answer_error


class Limits(unittest.TestCase):
    def test_shortest_ttl(self):
        o = Options().limits()
        self.assertEqual(o.ttl_min(), 2 * SECOND)
        self.assertEqual(Options(call_timeout=0.1).limits().ttl_min(), 2 * SECOND)            # 1 s + max(0.4 s, 1 s)
        self.assertEqual(Options(call_timeout=0.1, proof_margin=0.2).limits().ttl_min(), 1400 * MS)
        o.check_ttl(2 * SECOND)
        with self.assertRaises(TTLSettingsError) as e:
            o.check_ttl(2 * SECOND - MS)
        self.assertIn("want at least 2s", str(e.exception))
        self.assertIsInstance(e.exception, TTLOutOfRangeError)

    def test_call_timeouts(self):
        o = Options().limits()
        self.assertEqual(o.lease_call_timeout(2 * SECOND), 250 * MS)   # a quarter of the 1 s local life
        self.assertEqual(o.lease_call_timeout(3 * SECOND), 500 * MS)
        self.assertEqual(o.lease_call_timeout(15 * SECOND), 2 * SECOND)

    def test_settings_that_cannot_work(self):
        for kw in ({"renew_fraction": 0.7}, {"renew_fraction": 0}, {"renew_jitter": 1.0}, {"call_timeout": 0},
                   {"expiry_margin": -1}, {"acquire_lost_max": 0}, {"ttl_default": 0}, {"lock_wait_chunk": 0}):
            with self.subTest(kw), self.assertRaises(SettingsError):
                Options(**kw).validate()
        Options(renew_fraction=0.75 / 1.1).validate()   # the edge: f × (1 + j) = 3/4
        self.assertEqual(Options(proof_margin=2.0).proof_refresh_lead, 2.1)

    def test_machine_refuses_illegal_transitions(self):
        with self.assertRaises(AssertionError):
            machine.Machine(machine.EXPIRED).step(machine.EV_RENEW_OK)


def grant(request_id, ttl_ms=5000):
    return Grant.build(resource="jobs/x", owner="w", request_id=request_id, lease="l1", fence_token=3,
                       operation_root=operation_root("jobs/x", "op"), operation_class="default", backend_revision=1,
                       policy_generation=0, issuer_epoch=1, ttl_ms=ttl_ms, issued_at=0, expires_at=ttl_ms * MS,
                       held_until=ttl_ms * MS // 2)


def held(request_id, state=None):
    g = grant(request_id)
    if state is None:
        return Issued(g, "sig:k:x", expires_after_ms=5000)
    st = Status.build(grant=g.digest, state=state, backend_revision=1, issuer_epoch=1, issued_at=0, valid_until=0)
    return Issued(g, "sig:k:x", st, "sig:k:y")


class Acquire(unittest.TestCase):
    def core(self, **kw):
        ids = iter("req-%d" % i for i in range(2, 100))
        o = Options(**kw).limits()
        req = {"resource": "jobs/x", "operationId": "op", "operationClass": "default", "requestId": "req-1",
               "ttlMs": 5000, "waitMs": 0}
        return AcquireCore(o, req, lambda: next(ids), lambda: 0.5)

    def test_lost_answer_is_asked_for_by_the_same_request_id(self):
        a = self.core()
        call = a.next(0).call
        self.assertEqual((call.kind, call.request["requestId"]), (CALL_ACQUIRE, "req-1"))
        r = a.step(SECOND, Lost(call))
        self.assertEqual([(t.frm, t.to) for t in r.transitions], [(machine.REQUESTED, machine.REQUESTED)])
        self.assertIsNone(a.next(SECOND).call)   # backing off
        q = a.next(2 * SECOND).call
        self.assertEqual((q.kind, q.request["requestId"]), (CALL_QUERY_REQUEST, "req-1"))
        a.step(2 * SECOND, Answer(q, None, RequestNotFoundError("none")))   # not granted (yet)
        again = a.next(2 * SECOND).call
        self.assertEqual((again.kind, again.request["requestId"]), (CALL_ACQUIRE, "req-1"))
        a.step(3 * SECOND, Answer(again, held("req-1")))
        self.assertTrue(a.done)
        self.assertIsNone(a.err)
        # expires 5 s after the call reached the registry, TTL 5 s: counts from the send
        self.assertEqual(a.lease_from(3 * SECOND), 2 * SECOND)

    def test_query_answers_the_grant(self):
        a = self.core()
        a.step(SECOND, Lost(a.next(0).call))
        q = a.next(2 * SECOND).call
        a.step(2 * SECOND, Answer(q, held("req-1", "HELD")))
        self.assertTrue(a.done)
        self.assertEqual(a.issued.grant.request_id, "req-1")

    def test_only_an_ended_grant_gives_a_new_request_id(self):
        a = self.core()
        a.step(SECOND, Lost(a.next(0).call))
        q = a.next(2 * SECOND).call
        a.step(2 * SECOND, Answer(q, held("req-1", "EXPIRED")))
        self.assertFalse(a.done)
        c = a.next(2 * SECOND).call
        self.assertEqual((c.kind, c.request["requestId"]), (CALL_ACQUIRE, "req-2"))

    def test_conflict_backs_off_with_the_same_id(self):
        a = self.core()
        a.step(0, Answer(a.next(0).call, None, ConflictError("busy store")))
        self.assertEqual(a.next(0).wake, 100 * MS)  # 100 ms × (0.5 + 0.5)
        self.assertEqual(a.next(100 * MS).call.request["requestId"], "req-1")

    def test_lock_keeps_its_place_across_wait_timeouts(self):
        a = self.core()
        a.wait_as_lock(25 * SECOND, 60 * SECOND)
        c = a.next(0).call
        self.assertEqual((c.request["waitMs"], c.timeout), (25000, 27 * SECOND))
        a.step(25 * SECOND, Answer(c, None, WaitTimeoutError("waited")))
        c = a.next(25 * SECOND).call
        self.assertEqual(c.request["requestId"], "req-1")
        a.step(50 * SECOND, Answer(c, None, WaitTimeoutError("waited")))
        c = a.next(50 * SECOND).call
        self.assertEqual(c.request["waitMs"], 10000)   # never past until
        a.step(60 * SECOND, Answer(c, None, WaitTimeoutError("waited")))
        self.assertTrue(a.done)
        self.assertIsInstance(a.err, WaitTimeoutError)

    def test_unreachable_keeps_the_request(self):
        a = self.core(acquire_lost_max=3)
        now = 0
        for i in range(3):
            r = a.next(now)
            if r.call is None:
                now = r.wake
                r = a.next(now)
            a.step(now, Lost(r.call))
        self.assertIsInstance(a.unreachable, Unreachable)
        self.assertFalse(a.done)
        self.assertEqual(a.request["requestId"], "req-1")

    def test_answer_about_another_request_is_bad(self):
        a = self.core()
        a.step(0, Answer(a.next(0).call, held("req-9")))
        self.assertIsInstance(a.err, BadAnswer)


class Refusing:
    """A transport that records each acquire and answers it with the
    error the registry's answer (status, code) means."""

    def __init__(self, status, code):
        self.status, self.code, self.sent = status, code, []

    def acquire(self, request, timeout):
        self.sent.append(dict(request))
        raise answer_error(self.status, json.dumps({"code": self.code, "message": "registry: words"}).encode())


class AcquireSends(unittest.TestCase):
    def acquire(self, status, code, **kw):
        t = Refusing(status, code)
        with self.assertRaises(RegistryError) as e:
            Session("http://127.0.0.1:1", transport=t).acquire("pool/a", ttl=10, **kw)
        return t.sent, e.exception

    def test_permits_only_when_given(self):
        sent, _ = self.acquire(409, "BUSY")
        self.assertNotIn("permits", sent[0])
        sent, _ = self.acquire(409, "BUSY", permits=4)
        self.assertEqual(sent[0]["permits"], 4)

    def test_refusals_are_final_and_named(self):
        for status, code, cls, retryable in ((409, "PERMITS_MISMATCH", PermitsMismatchError, False),
                                             (507, "STORE_FULL", StoreFullError, True)):
            with self.subTest(code):
                sent, e = self.acquire(status, code, permits=2)
                self.assertEqual(len(sent), 1, "a refusal is final: sent once")
                self.assertIs(type(e), cls)
                self.assertNotIsInstance(e, OutcomeUnknown)
                self.assertEqual((e.code, e.status, e.retryable), (code, status, retryable))
                self.assertEqual(str(e), "fencegate: registry: %s: registry: words" % code)

    def test_permits_that_are_not_a_number(self):
        for bad in (-1, "2", True, 1.5):
            with self.subTest(bad), self.assertRaises(InvalidRequestError):
                Session("http://127.0.0.1:1", transport=Refusing(409, "BUSY")).acquire("pool/a", ttl=10, permits=bad)


if __name__ == "__main__":
    unittest.main()
