"""Proves the Python cores' lock-set rules (client/core/set.go, rule for
rule) and what a read acquire sends; tests/locksets.py runs them against
a real registry.

- A set's acquire sends the set request (members sorted, the set's
  request ID); after a lost answer it sends the SAME set request again,
  never a query by request ID; an answer must name every member in
  order, each under "set.<i>.<id>", or it is a BadAnswer; a member whose
  grant already ended makes the whole answer final for that ID (a fresh
  one next): a set is never taken in part.
- A set is ONE lease core: each renewal names every member; the
  registry's refusal, or any one member's status not HELD, ends the
  whole set EXPIRED; an answer missing a member says nothing (lost);
  every member's envelope carries its own grant and fence; an EXPIRED
  set hands over its members as leftovers to release, at the drain's
  end.
"""

import json
import time
import unittest

from fencegate.core import machine
from fencegate.core.acquire import AcquireCore
from fencegate.core.lease import (CALL_ACQUIRE, CALL_RENEW, Answer, BuildEnvelope, Granted, LeaseCore, Lost,
                                  Settle, member_request_id, set_name)
from fencegate.core.limits import SECOND
from fencegate.errors import BadAnswer, InvalidRequestError, LeaseBrokenError, NotCertain
from fencegate.grant import Grant, Issued, Status, operation_root
from fencegate.options import Options
from fencegate.session import Session
from fencegate.transport import answer_error

MEMBERS = ["acct/a", "acct/b"]
DIGEST = "sha256:" + "ab" * 32


def member_grant(resource, request_id, fence, lease):
    return Grant.build(resource=resource, owner="w", request_id=request_id, lease=lease, fence_token=fence,
                       operation_root=operation_root(resource, "op"), operation_class="default", backend_revision=1,
                       policy_generation=0, issuer_epoch=1, ttl_ms=10000, issued_at=0, expires_at=10 * SECOND,
                       held_until=10 * SECOND)


def fresh_set(request_id, fences=(3, 8)):
    return [Issued(member_grant(m, member_request_id(request_id, i), fences[i], "l-%d" % i), "sig:k:x",
                   expires_after_ms=10000) for i, m in enumerate(MEMBERS)]


def status_of(issued, state, valid_until):
    st = Status.build(grant=issued.grant.digest, state=state, backend_revision=2, issuer_epoch=1, issued_at=0,
                      valid_until=valid_until)
    return Issued(issued.grant, issued.grant_proof, st, "sig:k:s")


class SetAcquire(unittest.TestCase):
    def core(self):
        ids = iter("req-%d" % i for i in range(2, 100))
        req = {"resource": set_name(MEMBERS), "operationId": "op", "operationClass": "default", "requestId": "req-1",
               "ttlMs": 10000, "waitMs": 0}
        return AcquireCore(Options().limits(), req, lambda: next(ids), lambda: 0.5, MEMBERS)

    def test_lost_answer_resends_the_same_set_request(self):
        a = self.core()
        c = a.next(0).call
        self.assertEqual((c.kind, c.set_request["members"], c.set_request["requestId"]), (CALL_ACQUIRE, MEMBERS, "req-1"))
        a.step(SECOND, Lost(c))
        c = a.next(2 * SECOND).call
        self.assertEqual((c.kind, c.set_request["requestId"]), (CALL_ACQUIRE, "req-1"),
                         "a set has no query by request ID: the same set request goes again")
        answers = fresh_set("req-1")
        a.step(2 * SECOND, Answer(c, answers[0], None, answers))
        self.assertTrue(a.done)
        self.assertIsNone(a.err)
        self.assertEqual([i.grant.resource for i in a.issued_set], MEMBERS)

    def test_answer_not_under_the_member_ids_is_bad(self):
        for name, answers in (("other set", fresh_set("req-9")), ("one member", fresh_set("req-1")[:1]),
                              ("swapped", list(reversed(fresh_set("req-1"))))):
            with self.subTest(name):
                a = self.core()
                a.step(0, Answer(a.next(0).call, answers[0], None, answers))
                self.assertIsInstance(a.err, BadAnswer)

    def test_a_member_that_ended_is_final_for_the_id(self):
        a = self.core()
        answers = fresh_set("req-1")
        answers[1] = status_of(answers[1], "EXPIRED", 0)
        a.step(0, Answer(a.next(0).call, answers[0], None, answers))
        self.assertFalse(a.done, "a set is never taken in part")
        self.assertEqual(a.next(0).call.set_request["requestId"], "req-2")


class SetLease(unittest.TestCase):
    def core(self):
        return LeaseCore(Options().limits(), Granted(fresh_set("req-1")[0], "op", 0, fresh_set("req-1")))

    def renewal(self, c):
        now = 4 * SECOND  # past a third of the 9 s local life
        call = c.next(now).call
        self.assertEqual(call.kind, CALL_RENEW)
        self.assertEqual([g.resource for g in call.set], MEMBERS, "one renewal names every member")
        return now, call

    def test_renewed_whole(self):
        c = self.core()
        now, call = self.renewal(c)
        answers = [status_of(i, "HELD", 20 * SECOND) for i in c.set]
        c.step(now, Answer(call, answers[0], None, answers))
        self.assertEqual(c.state, machine.HELD)
        self.assertEqual(c.sched.deadline, now + 9 * SECOND)

    def test_one_member_not_held_ends_the_set(self):
        c = self.core()
        now, call = self.renewal(c)
        answers = [status_of(c.set[0], "HELD", 20 * SECOND), status_of(c.set[1], "BROKEN", 20 * SECOND)]
        c.step(now, Answer(call, answers[0], None, answers))
        self.assertEqual(c.state, machine.EXPIRED)
        self.assertFalse(c.certain_at(now))

    def test_refused_renewal_ends_the_set_and_leaves_leftovers(self):
        c = self.core()
        env = c.step(SECOND, BuildEnvelope(1, DIGEST, member=1)).envelope
        now, call = self.renewal(c)
        err = answer_error(409, json.dumps({"code": "LEASE_BROKEN", "message": "acct/b broken"}).encode())
        self.assertIsInstance(err, LeaseBrokenError)
        c.step(now, Answer(call, None, err, None))
        self.assertEqual(c.state, machine.EXPIRED)
        grants, at = c.leftovers()
        self.assertEqual([g.resource for g in grants], MEMBERS)
        self.assertEqual(at, 10 * SECOND + Options().limits().drain_margin, "the unsettled envelope's proof first")
        c.step(now, Settle(1, "ACCEPTED", member=1))
        self.assertEqual(c.leftovers()[1], 0)
        self.assertEqual(json.loads(env)["resource"], "acct/b")

    def test_an_answer_missing_a_member_says_nothing(self):
        c = self.core()
        now, call = self.renewal(c)
        one = [status_of(c.set[0], "HELD", 20 * SECOND)]
        c.step(now, Answer(call, one[0], None, one))
        self.assertEqual(c.state, machine.UNKNOWN)

    def test_each_member_envelope_is_its_own(self):
        c = self.core()
        envs = [json.loads(c.step(SECOND, BuildEnvelope(1, DIGEST, member=i)).envelope) for i in range(2)]
        self.assertEqual([(e["resource"], e["fenceToken"], e["lease"]) for e in envs],
                         [("acct/a", 3, "l-0"), ("acct/b", 8, "l-1")])
        self.assertEqual(len(c.unsettled), 2, "each member counts its own segments")
        self.assertIsInstance(c.step(SECOND, BuildEnvelope(1, DIGEST, member=2)).err, IndexError)
        self.assertIsNone(LeaseCore(Options().limits(), Granted(fresh_set("req-1")[0], "op", 0)).leftovers())

    def test_deadline_stops_every_member(self):
        c = self.core()
        for i in range(2):
            self.assertIsInstance(c.step(9 * SECOND, BuildEnvelope(1, DIGEST, member=i)).err, NotCertain)


class Sent:
    """A transport that records each acquire and refuses it BUSY."""

    def __init__(self):
        self.sent = []

    def acquire(self, request, timeout):
        self.sent.append(dict(request))
        raise answer_error(409, b'{"code": "BUSY", "message": "held"}')

    acquire_set = acquire


class Sends(unittest.TestCase):
    def test_mode_only_when_read(self):
        t = Sent()
        s = Session("http://127.0.0.1:1", transport=t)
        for kw in ({}, {"mode": "read"}):
            with self.assertRaises(Exception):
                s.acquire("rw/a", ttl=10, **kw)
        self.assertNotIn("mode", t.sent[0])
        self.assertEqual(t.sent[1]["mode"], "read")
        with self.assertRaises(InvalidRequestError):
            s.acquire("rw/a", ttl=10, mode="write")

    def test_set_members_sorted_and_checked(self):
        t = Sent()
        s = Session("http://127.0.0.1:1", transport=t)
        with self.assertRaises(Exception):
            s.acquire_set(["acct/b", "acct/a"], ttl=10)
        self.assertEqual(t.sent[0]["members"], MEMBERS)
        self.assertEqual(t.sent[0]["requestId"][:4], "req-")
        for bad in (["acct/a"], ["acct/a", "acct/a"], "acct/a", ["acct/a", "Acct/B"]):
            with self.subTest(bad), self.assertRaises(InvalidRequestError):
                s.acquire_set(bad, ttl=10)


class Granting:
    """A transport that grants every acquire (a fresh grant under its
    request ID, held for 10 s from now) and answers every release."""

    def acquire(self, request, timeout):
        now = time.time_ns()
        g = Grant.build(resource=request["resource"], owner="w", request_id=request["requestId"], lease="l-1",
                        fence_token=1, operation_root=operation_root(request["resource"], request["operationId"]),
                        operation_class="default", backend_revision=1, policy_generation=0, issuer_epoch=1,
                        ttl_ms=10000, issued_at=now, expires_at=now + 10 * SECOND, held_until=now + 10 * SECOND)
        return Issued(g, "sig:k:x", expires_after_ms=10000)

    def release(self, grant, timeout):
        pass


class SessionForgetsBeforeDone(unittest.TestCase):
    def test_release_returns_after_the_session_forgot_the_lease(self):
        s = Session("http://127.0.0.1:1", transport=Granting())
        ended = s._ended

        def slow(names, shell):  # widen the window between the core's end and the session's forgetting
            time.sleep(0.2)
            ended(names, shell)
        s._ended = slow
        lease = s.acquire("jobs/again", ttl=10)
        self.assertTrue(lease.release(drain=False, timeout=5))
        self.assertIsNone(s.lease("jobs/again"), "release returned while the session still kept the lease")
        s.acquire("jobs/again", ttl=10).release(drain=False, timeout=5)  # not AlreadyHeld


if __name__ == "__main__":
    unittest.main()
