"""Proves the Python client's lock sets and read/write locks against a
real registry behind the real HTTP API (clients/python/locksets_test.go
serves it and runs this module), each safety check beside its negative
control, a deliberately wrong client path the same check catches:

- crossed-order sets in two Python processes (tests/setworker.py, one
  taking {a, b}, the other {b, a}, rounds in a loop): both finish every
  round (no deadlock), each round holds every member at the registry
  (never part of the set), and the two processes' rounds never overlap.
  Control: the members taken one by one with plain locks in the order
  named — the workers deadlock, each holding one member.
- a set's acquire whose answer is lost (a proxy drops it after the
  registry acted) is sent again under the same set request ID and holds
  the grants the registry made for it. Control: a fresh request ID on the
  retry — refused BUSY by the set the first request holds.
- a member ended alone at the registry (its member lease released by
  itself; an admin's break would end every member) ends the whole set in
  the client: its next renewal is refused, lost is set and the set is EXPIRED; the other
  member is still held at the registry until the set's release, which
  frees it at once (not at its TTL). Control: a release that skips the
  leftovers — the other member stays held.
- two readers share a read/write lock while a writer waits; they
  released, the writer gets it. Control: the "writer" asking in read mode
  gets in beside the readers.
- a downgrade keeps the fence, its reader's grant is on NAME/_read, the
  write lease takes no envelope from then on, and a queued writer does
  not get in while the reader holds. Control: the naive downgrade
  (release, then acquire a reader's lease: curator#796) — the queued
  writer gets in between.

Environment (set by locksets_test.go; without it this module fails, it
does not skip): FENCEGATE_TEST_REGISTRY, FENCEGATE_TEST_TOKEN_A/_B/_C,
FENCEGATE_TEST_TOKEN_ADMIN.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import fencegate
from tests.proxy import LosingProxy

HERE = os.path.dirname(os.path.abspath(__file__))


def env(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError("tests.locksets needs %s (clients/python/locksets_test.go sets it)" % name)
    return v


def session(who):
    return fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env("FENCEGATE_TEST_TOKEN_" + who))


def holder(s, resource):
    return (s.transport.lock_status(resource, 5).get("holder") or {}).get("lease")


# --- crossed-order sets in two processes ---------------------------------------


def crossed_sets(tag, mutant="", rounds=8):
    """Run two set workers over {a, b}, one naming them a,b and the other
    b,a; return the failures seen (none: no deadlock, every round held
    every member, no two rounds overlapped)."""
    a, b = "xset/%s/a" % tag, "xset/%s/b" % tag
    sync = tempfile.mkdtemp(prefix="fencegate-xset-")
    procs = []
    for token, members in (("A", [a, b]), ("B", [b, a])):
        e = dict(os.environ, FENCEGATE_URL=env("FENCEGATE_TEST_REGISTRY"), FENCEGATE_TOKEN=env("FENCEGATE_TEST_TOKEN_" + token),
                 MEMBERS=",".join(members), ROUNDS=str(rounds), HOLD="0.1", SYNC=sync, ID=token, PEERS="2", WAIT="2.5",
                 MUTANT=mutant, PYTHONPATH=os.path.dirname(HERE))
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "setworker.py")], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    failures, spans = [], []
    for p in procs:
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            failures.append("a worker did not finish in 60 s")
        lines = [json.loads(l) for l in out.splitlines() if l.strip()]
        failures += [l["error"] for l in lines if "error" in l]
        done = [l for l in lines if "round" in l]
        if p.returncode != 0 or len(done) != rounds:
            failures.append("worker exited %s after %d of %d rounds: %s" % (p.returncode, len(done), rounds, err[-500:]))
        spans += [(l["start"], l["end"]) for l in done]
    shutil.rmtree(sync, ignore_errors=True)
    spans.sort()
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        if s2 < e1:
            failures.append("two rounds held the set at once: %.3f-%.3f and %.3f-%.3f" % (s1, e1, s2, e2))
    return failures


class CrossedOrder(unittest.TestCase):
    def test_crossed_order_sets_never_deadlock_nor_hold_part(self):
        self.assertEqual(crossed_sets("sets"), [])

    def test_control_one_by_one_deadlocks(self):
        failures = crossed_sets("onebyone", mutant="onebyone", rounds=1)
        self.assertTrue(any("partial hold" in f and "deadlock" in f for f in failures),
                        "the check missed the one-by-one deadlock: %s" % failures)


# --- a lost acquire answer --------------------------------------------------------------


def lost_set_answer(tag, new_id_on_retry=False):
    """Take a set through a proxy that loses the registry's first answer
    to it; return the failures seen: the client must send the same set
    request again under the same request ID and hold the grants the
    registry made for it (never a second set of grants)."""
    members = ["lset/%s/a" % tag, "lset/%s/b" % tag]
    proxy = LosingProxy(env("FENCEGATE_TEST_REGISTRY"), lambda method, path, n: path == "/v1/lockset/acquire" and n == 0)
    failures = []
    try:
        a = fencegate.Session(proxy.url, token=env("FENCEGATE_TEST_TOKEN_A"))
        if new_id_on_retry:  # the deliberately wrong client path: a fresh request ID after a lost answer
            sent, acquire_set = [], a.transport.acquire_set

            def fresh(request, timeout):
                sent.append(request["requestId"])
                if len(sent) > 1:
                    request = dict(request, requestId=a.new_request_id())
                return acquire_set(request, timeout)
            a.transport.acquire_set = fresh
        try:
            ls = a.acquire_set(members, ttl=3)
        except fencegate.FencegateError as e:
            failures.append("the set was not granted after its lost answer: %s: %s" % (type(e).__name__, e))
            return failures
        calls = [c for c in proxy.calls() if c[1] == "/v1/lockset/acquire"]
        if [c[3] for c in calls] != [True, False] or {c[2] for c in calls} != {ls.request_id}:
            failures.append("set acquires through the proxy %s, the set's request ID %s" % (calls, ls.request_id))
        for h in ls.leases:
            if holder(a, h.resource) != h.lease_id or h.fence != 1:
                failures.append("%s: holder %s fence %d, not the set's first grant %s"
                                % (h.resource, holder(a, h.resource), h.fence, h.lease_id))
        ls.release(drain=False, timeout=5)
    finally:
        proxy.close()
    return failures


class LostAnswer(unittest.TestCase):
    def test_lost_set_answer_resent_under_the_same_request_id(self):
        self.assertEqual(lost_set_answer("same"), [])

    def test_control_fresh_request_id(self):
        failures = lost_set_answer("fresh", new_id_on_retry=True)
        self.assertTrue(any(f.startswith("the set was not granted after its lost answer: BusyError") for f in failures),
                        "the check missed a second request ID for one set: %s" % failures)

    def test_members_reserved_by_the_session(self):
        a = session("A")
        one = a.acquire("lset/reserved/a", ttl=3)
        with self.assertRaises(fencegate.AlreadyHeld):
            a.acquire_set(["lset/reserved/b", "lset/reserved/a"], ttl=3)
        one.release(drain=False)
        ls = a.acquire_set(["lset/reserved/b", "lset/reserved/a"], ttl=3)
        with self.assertRaises(fencegate.AlreadyHeld):
            a.acquire("lset/reserved/b", ttl=3)
        ls.release(drain=False, timeout=5)


# --- a broken member ends the set --------------------------------------------------


def broken_member(tag, skip_leftovers=False):
    """Take a set {x, y}, end x alone at the registry (its member lease
    released by itself, over the set's own session transport), and return
    the failures seen: the set must end whole (lost, EXPIRED) while y stays
    held at the registry, and its release must free y at once. (An
    admin's break of x would end y too: a break ends the whole set.)"""
    x, y = "bset/%s/x" % tag, "bset/%s/y" % tag
    a, b = session("A"), session("B")
    failures = []
    ls = a.lock_set([y, x], ttl=6, timeout=10)
    if ls.members != [x, y] or a.lease(x) is not ls.lease(x) or a.lease(y) is not ls.lease(y):
        failures.append("members %s, session leases %s %s" % (ls.members, a.lease(x), a.lease(y)))
    if ls.lease(x).grant.request_id != "set.0." + ls.request_id or ls.lease(y).grant.request_id != "set.1." + ls.request_id:
        failures.append("member request IDs %s %s under %s" % (ls.lease(x).grant.request_id,
                                                              ls.lease(y).grant.request_id, ls.request_id))
    a.transport.call("POST", "/v1/release", {"resource": x, "lease": ls.lease(x).grant.lease}, 5)
    if not ls.lost.wait(6):  # the next renewal (a third into the 5 s local life) is refused
        failures.append("the set's lost was not set after a member ended")
    if not ls.done.wait(5) or ls.state != "EXPIRED":
        failures.append("the set is %s, not EXPIRED, after a member ended" % ls.state)
    for h in ls.leases:
        try:
            h.envelope(1, fencegate.payload_digest(b"x"))
            failures.append("member %s still builds envelopes" % h.resource)
        except fencegate.NotCertain:
            pass
    if holder(b, y) != ls.lease(y).lease_id:
        failures.append("y is not held by the set's member lease before the release (the story shows nothing)")
    if skip_leftovers:
        ls._sh._leftovers_released = True  # the deliberately wrong client path: forget the rest of the set
    t0 = time.monotonic()
    ls.release(timeout=5)
    try:
        b.acquire(y, ttl=3).release()
    except fencegate.BusyError as e:
        failures.append("y still held after the set's release: %s" % e)
    if time.monotonic() - t0 > 3:
        failures.append("the release took %.1f s" % (time.monotonic() - t0))
    if a.lease(x) is not None or a.lease(y) is not None:
        failures.append("the ended set's members are still the session's")
    return failures


class BrokenMember(unittest.TestCase):
    def test_broken_member_ends_the_set_and_release_frees_the_rest(self):
        self.assertEqual(broken_member("frees"), [])

    def test_control_release_without_leftovers(self):
        failures = broken_member("control", skip_leftovers=True)
        self.assertTrue(any(f.startswith("y still held after the set's release") for f in failures),
                        "the check missed a set release that leaves a member held: %s" % failures)


# --- read/write locks ------------------------------------------------------------------


class Waiter(threading.Thread):
    """Takes the lock (as session s, in mode) in the background: granted
    is set with the lease once it is HELD; it holds until release is set."""

    def __init__(self, s, name, mode="", timeout=20):
        super().__init__(daemon=True)
        self.s, self.name, self.mode, self.timeout = s, name, mode, timeout
        self.granted, self.release, self.lease, self.error = threading.Event(), threading.Event(), None, None
        self.start()

    def run(self):
        try:
            self.lease = self.s.lock(self.name, ttl=3, timeout=self.timeout, mode=self.mode)
        except Exception as e:
            self.error = e
            return
        self.granted.set()
        self.release.wait(30)
        self.lease.release(drain=False, timeout=5)


def readers_share(tag, writer_mode=""):
    """Two readers hold the lock together while a writer waits; then the
    writer gets it. Returns the failures seen."""
    name = "rw/%s" % tag
    failures = []
    r1 = session("A").acquire(name, ttl=3, mode="read")
    r2 = session("B").acquire(name, ttl=3, mode="read")
    if (r1.resource, r2.resource) != (name + "/_read",) * 2 or r1.fence != r2.fence:
        failures.append("readers' grants %s %s fences %d %d" % (r1.resource, r2.resource, r1.fence, r2.fence))
    if r1.state != "HELD" or r2.state != "HELD":
        failures.append("two readers do not share: %s %s" % (r1.state, r2.state))
    w = Waiter(session("C"), name, writer_mode)
    if w.granted.wait(1):
        failures.append("a writer got in beside two readers")
    r1.release(drain=False)
    r2.release(drain=False)
    if not w.granted.wait(10):
        failures.append("the writer was not granted once the readers left: %s" % w.error)
    elif writer_mode == "" and w.lease.fence <= r1.fence:
        failures.append("the writer's fence %d is not above the readers' %d" % (w.lease.fence, r1.fence))
    w.release.set()
    w.join(10)
    return failures


def plain_downgrade(s, lease):
    return s.downgrade(lease, timeout=10)


def naive_downgrade(s, lease):
    """The deliberately wrong client path: release, then a reader's acquire."""
    name = lease.resource
    lease.release(drain=False)
    return s.lock(name, ttl=3, mode="read", timeout=3)


def downgrade_story(tag, downgrade=plain_downgrade):
    """A writer downgrades while another writer is queued: the reader
    keeps the fence and the queued writer does not get in while it holds.
    Returns the failures seen."""
    name = "rwd/%s" % tag
    failures = []
    a = session("A")
    w = a.lock(name, ttl=3, timeout=10)
    queued = Waiter(session("B"), name, "")
    time.sleep(0.5)  # the second writer is queued
    if queued.granted.is_set():
        failures.append("the queued writer got in beside the writer (the story shows nothing)")
    got = {}

    def run():
        try:
            got["reader"] = downgrade(a, w)
        except fencegate.FencegateError as e:
            got["error"] = e

    dg = threading.Thread(target=run, daemon=True)
    dg.start()
    dg.join(15)
    reader = got.get("reader")
    if queued.granted.is_set():
        failures.append("a queued writer got in during the downgrade")
    if reader is None:
        failures.append("no reader's lease after the downgrade: %r" % got.get("error"))
        queued.release.set()
        return failures
    if reader.resource != name + "/_read" or reader.fence != w.fence or a.lease(name) is not reader:
        failures.append("reader %s fence %d (writer's %d), session keeps %s" % (reader.resource, reader.fence,
                                                                              w.fence, a.lease(name)))
    try:
        w.envelope(1, fencegate.payload_digest(b"late"))
        failures.append("the downgraded write lease still builds envelopes")
    except fencegate.NotCertain:
        pass
    if not w.done.wait(5) or w.state != "RELEASED":
        failures.append("the write lease is %s after the downgrade, not RELEASED" % w.state)
    if queued.granted.wait(1):
        failures.append("a queued writer got in while the downgraded reader holds")
    reader.release(drain=False)
    if not queued.granted.wait(10):
        failures.append("the queued writer was not granted after the reader left: %s" % queued.error)
    elif queued.lease.fence <= w.fence:
        failures.append("the queued writer's fence %d is not above %d" % (queued.lease.fence, w.fence))
    queued.release.set()
    queued.join(10)
    return failures


class ReadersShare(unittest.TestCase):
    def test_two_readers_share_while_a_writer_waits(self):
        self.assertEqual(readers_share("share"), [])

    def test_control_writer_in_read_mode(self):
        failures = readers_share("control", writer_mode="read")
        self.assertIn("a writer got in beside two readers", failures)


class Downgrade(unittest.TestCase):
    def test_downgrade_lets_no_queued_writer_in(self):
        self.assertEqual(downgrade_story("plain"), [])

    def test_control_naive_downgrade(self):
        failures = downgrade_story("naive", naive_downgrade)
        self.assertTrue(any("queued writer got in" in f for f in failures),
                        "the check missed a writer getting in during a naive downgrade: %s" % failures)

    def test_downgrade_refusals(self):
        a = session("A")
        r = a.acquire("rwd/refuse", ttl=3, mode="read")
        with self.assertRaises(fencegate.InvalidRequestError):
            a.downgrade(r)
        r.release(drain=False)


if __name__ == "__main__":
    unittest.main()
