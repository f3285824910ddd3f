"""Proves the Python client with real processes: a real `fencegate serve`
signing with an HMAC key, the gate installed in a real PostgreSQL with
that key enrolled, and Python workers in processes of their own.

- A worker frozen (SIGSTOP) with its envelope built, past its TTL, while
  the next worker is granted the resource and writes: thawed, its write
  raises StaleOwner and nothing of it lands; the next worker's row stands.
  The negative control runs the same story lease-only (no gate, an
  unprotected table): the thawed worker's stale row lands after its
  successor's.
- An acquire whose answer is lost (a proxy drops it after the registry
  granted) is asked for by the same request ID, and the grant it gets is
  the one that request was given: never a second identity.
- A lease of the shortest TTL the registry accepts (2 s, TTL_MIN) renews
  and holds for several TTLs, never OWNERSHIP_UNKNOWN, and its write is
  accepted at the end.
- A lease of that shortest TTL cut off from the registry (a proxy holds
  every call after the acquire unanswered, as a partition does): lost is
  set, and the state is neither HELD nor RENEWING, at every reading at or
  after the local deadline, and a waiter on lost wakes; the next owner is
  granted only after that. The control: lease.done, which only an answer
  from the registry sets, is still unset at the deadline; the same
  readings catch it.
- Every SQLSTATE the gate inside PostgreSQL raises is its exception
  class (StaleOwner for FG009, ...); a write outside apply (FG020) is not.
- An election: the second candidate waits its turn, leads with a higher
  term once the first resigns (handed over by the release, before the
  first's TTL could end it), and observe() sees both terms.

cmd/fencegate/python_client_test.go sets the world up and runs this module
(FENCEGATE_TEST_REGISTRY, FENCEGATE_TEST_TOKEN_A/_B, FENCEGATE_TEST_DSN_A/_B
and FENCEGATE_TEST_DSN_ADMIN); without them it fails, it does not skip.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import psycopg

import fencegate
import fencegate.errors
import fencegate.pg
from tests.proxy import LosingProxy

HERE = os.path.dirname(os.path.abspath(__file__))
ENV_NAMES = ("FENCEGATE_TEST_REGISTRY", "FENCEGATE_TEST_TOKEN_A", "FENCEGATE_TEST_TOKEN_B", "FENCEGATE_TEST_DSN_A",
             "FENCEGATE_TEST_DSN_B", "FENCEGATE_TEST_DSN_ADMIN")


def env(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError("tests.realprocess needs %s (cmd/fencegate/python_client_test.go sets it)" % name)
    return v


def values(resource):
    with psycopg.connect(env("FENCEGATE_TEST_DSN_ADMIN")) as conn:
        rows = conn.execute("SELECT value FROM report WHERE resource = %s ORDER BY id", (resource,)).fetchall()
    return [r[0] for r in rows]


class Worker:
    """tests/pyworker.py in a process of its own."""

    def __init__(self, who, resource, value, ttl, freeze=False, plain=False):
        e = dict(os.environ, FENCEGATE_URL=env("FENCEGATE_TEST_REGISTRY"), FENCEGATE_TOKEN=env("FENCEGATE_TEST_TOKEN_" + who),
                 PG_DSN=env("FENCEGATE_TEST_DSN_" + who), RESOURCE=resource, VALUE=value, TTL=str(ttl),
                 FREEZE="1" if freeze else "0", PLAIN="1" if plain else "0", PYTHONPATH=os.path.dirname(HERE))
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "pyworker.py")], env=e, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        self.lines = []

    def expect(self, prefix, timeout=60):
        """The next line starting with prefix (lines before it are kept)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            line = self.p.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if line.startswith(prefix):
                return line.strip()
        raise AssertionError("worker never printed %r:\n%s" % (prefix, "\n".join(self.lines)))

    def finish(self, timeout=60):
        out, _ = self.p.communicate(timeout=timeout)
        self.lines += out.splitlines()
        return self.p.returncode

    def stopped(self):
        with open("/proc/%d/stat" % self.p.pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"

    def kill(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGCONT)
            self.p.kill()
            self.p.wait()


def field(line, name):
    return int(line.split(name + "=")[1].split()[0])


class FrozenWorker(unittest.TestCase):
    """The fenced story and its lease-only negative control, side by side."""

    def setUp(self):
        with psycopg.connect(env("FENCEGATE_TEST_DSN_ADMIN"), autocommit=True) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS report_plain (resource TEXT NOT NULL, value TEXT NOT NULL, "
                         "at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())")
            conn.execute("GRANT INSERT ON report_plain TO PUBLIC")

    def story(self, resource, plain):
        """A frozen with its write in hand past its TTL, B granted and
        writing, A thawed: the lines A and B printed."""
        a = Worker("A", resource, "by A, frozen", ttl=2, freeze=True, plain=plain)
        self.addCleanup(a.kill)
        a_fence = field(a.expect("frozen"), "fence")
        for _ in range(500):
            if a.stopped():
                break
            time.sleep(0.01)
        self.assertTrue(a.stopped(), "worker A did not stop itself")
        frozen_at = time.monotonic()
        b = Worker("B", resource, "by B", ttl=10, plain=plain)  # A's TTL is the one the story waits out
        self.addCleanup(b.kill)
        b_line = b.expect("outcome")
        self.assertEqual(b.finish(), 0, "\n".join(b.lines))
        self.assertGreater(field(b_line, "fence"), a_fence)
        self.assertGreater(time.monotonic() - frozen_at, 2.0, "B wrote before A's TTL could have run out")
        a.p.send_signal(signal.SIGCONT)
        thawed, a_line = a.expect("thawed"), a.expect("outcome")
        return a, thawed, a_line, b_line

    def test_thawed_worker_write_is_stale_owner_and_the_next_owners_row_stands(self):
        got = {}

        def run(kind, resource):
            try:
                got[kind] = self.story(resource, kind == "plain")
            except BaseException as e:  # raised below, in the test's own thread
                got[kind] = e
        threads = [threading.Thread(target=run, args=kr) for kr in (("fenced", "jobs/py-frozen"), ("plain", "jobs/py-plain"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(sorted(got), ["fenced", "plain"], "a story did not finish")
        for story in got.values():
            if isinstance(story, BaseException):
                raise story
        a, thawed, a_line, b_line = got["fenced"]
        self.assertEqual(a.finish(), 1, "\n".join(a.lines))
        print("\n  fenced:     A %s; A %s; B %s" % (thawed, a_line, b_line), file=sys.stderr)
        self.assertIn("lost=True", thawed, "the thawed lease did not know ownership was no longer certain")
        self.assertIn("outcome STALE_OWNER", a_line)
        self.assertIn("outcome ACCEPTED", b_line)
        self.assertEqual(field(a_line, "highest"), field(b_line, "fence"))
        self.assertEqual(values("jobs/py-frozen"), ["by B"])
        # The negative control: lease-only, the thawed worker's stale write
        # lands after its successor's.
        a, thawed, a_line, b_line = got["plain"]
        self.assertEqual(a.finish(), 0, "\n".join(a.lines))
        with psycopg.connect(env("FENCEGATE_TEST_DSN_ADMIN")) as conn:
            rows = [r[0] for r in conn.execute("SELECT value FROM report_plain WHERE resource = %s ORDER BY at",
                                               ("jobs/py-plain",)).fetchall()]
        print("  lease-only: A %s; B %s; rows in order %s" % (a_line, b_line, rows), file=sys.stderr)
        self.assertEqual(rows, ["by B", "by A, frozen"])


class Rejections(unittest.TestCase):
    def test_each_sqlstate_of_the_gate_is_its_class(self):
        """The gate inside PostgreSQL raises every outcome (fencegate.reject,
        the function fencegate.apply refuses with); psycopg's error maps to
        the outcome's class. A write outside apply (FG020) is not a gate
        answer: it stays psycopg's error."""
        seen = []
        with psycopg.connect(env("FENCEGATE_TEST_DSN_ADMIN"), autocommit=True) as conn:
            for outcome, cls in sorted(fencegate.errors.GATE_REJECTIONS.items()):
                with self.assertRaises(psycopg.Error) as e:
                    conn.execute("SELECT fencegate.reject(%s, 'test', '{\"highestFence\": 7}'::jsonb)", (outcome,))
                got = fencegate.pg.rejection(e.exception)
                self.assertIs(type(got), cls, outcome)
                self.assertEqual((e.exception.sqlstate, got.outcome, got.highest_fence), (cls.sqlstate, outcome, 7))
                seen.append("%s %s" % (e.exception.sqlstate, cls.__name__))
        with psycopg.connect(env("FENCEGATE_TEST_DSN_A"), autocommit=True) as conn:
            with self.assertRaises(psycopg.Error) as e:
                conn.execute("INSERT INTO report (resource, value) VALUES ('jobs/py-ungated', 'ungated')")
        self.assertEqual(e.exception.sqlstate, fencegate.pg.UNGUARDED)
        self.assertIsNone(fencegate.pg.rejection(e.exception))
        print("\n  %s" % ", ".join(seen), file=sys.stderr)
        self.assertEqual(len(seen), 16)


class LostAcquireAnswer(unittest.TestCase):
    def test_lost_answer_is_asked_for_by_the_same_request_id(self):
        proxy = LosingProxy(env("FENCEGATE_TEST_REGISTRY"),
                            lambda method, path, n: method == "POST" and path == "/v1/acquire" and n == 0)
        self.addCleanup(proxy.close)
        seen = []
        s = fencegate.Session(proxy.url, token=env("FENCEGATE_TEST_TOKEN_A"),
                              on_transition=lambda rid, frm, to, ev: seen.append((rid, frm, to, ev)))
        with s.acquire("jobs/py-lost", ttl=5) as lease:
            calls = proxy.calls()
            print("\n  proxy: %s\n  lease %s fence %d request %s" % (calls, lease.lease_id, lease.fence,
                                                                     lease.grant.request_id), file=sys.stderr)
            self.assertEqual(calls[0][:2], ("POST", "/v1/acquire"))
            self.assertTrue(calls[0][3], "the first answer was not dropped")
            rid = calls[0][2]
            self.assertEqual(calls[1][:2], ("GET", "/v1/requests/" + rid))
            self.assertEqual(lease.grant.request_id, rid)
            self.assertEqual([c for c in calls if c[1] == "/v1/acquire"], calls[:1], "a second acquire was sent")
            self.assertIn((rid, "REQUESTED", "REQUESTED", "AcquireLost"), seen)
            view = fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env("FENCEGATE_TEST_TOKEN_A"))
            holder = view.transport.lock_status("jobs/py-lost", 2)["holder"]
            self.assertEqual(holder["lease"], lease.lease_id)
            self.assertIsNone(s.pending("jobs/py-lost"))
            with self.assertRaises(fencegate.AlreadyHeld):
                s.acquire("jobs/py-lost", ttl=5)
        self.assertEqual(lease.state, "RELEASED")


class ShortestTTL(unittest.TestCase):
    def test_two_second_lease_renews_and_holds_past_its_ttl(self):
        resource, lives = "jobs/py-short", 3
        counts = {"unknown": 0, "renewed": 0}

        def count(_, frm, to, ev):
            counts["unknown"] += to == "OWNERSHIP_UNKNOWN"
            counts["renewed"] += ev == "RenewOK"

        s = fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env("FENCEGATE_TEST_TOKEN_A"), on_transition=count)
        self.assertEqual(fencegate.TTL_MIN, 2.0)
        with s.lock(resource, ttl=fencegate.TTL_MIN) as lease:
            lost = lease.lost
            start = time.monotonic()
            while time.monotonic() - start < lives * fencegate.TTL_MIN:
                st = lease.state
                self.assertIn(st, ("HELD", "RENEWING"), "%.2f s into the lease" % (time.monotonic() - start))
                self.assertFalse(lost.is_set())
                self.assertGreater(lease.deadline, time.time())
                time.sleep(0.05)
            with psycopg.connect(env("FENCEGATE_TEST_DSN_A"), autocommit=True) as conn:
                receipt = fencegate.pg.apply(conn, lease, b"short", lambda c: c.execute(
                    "INSERT INTO report (resource, value) VALUES (%s, %s)", (resource, "after %d TTLs" % lives)))
        print("\n  %d renewals in %.1f s, %d times OWNERSHIP_UNKNOWN, receipt fence %s" % (
            counts["renewed"], lives * fencegate.TTL_MIN, counts["unknown"], receipt.get("fenceToken")), file=sys.stderr)
        self.assertEqual(counts["unknown"], 0)
        self.assertGreaterEqual(counts["renewed"], 2 * lives)
        self.assertEqual(values(resource), ["after %d TTLs" % lives])
        with self.assertRaises(fencegate.TTLSettingsError):
            s.lock(resource, ttl=fencegate.TTL_MIN - 0.001)


class CutOff(unittest.TestCase):
    def test_lost_is_set_no_later_than_the_local_deadline(self):
        resource, ttl = "jobs/py-cutoff", fencegate.TTL_MIN
        cut = threading.Event()
        proxy = LosingProxy(env("FENCEGATE_TEST_REGISTRY"), lambda *_: False, hold=lambda *_: cut.is_set())
        self.addCleanup(proxy.close)
        s = fencegate.Session(proxy.url, token=env("FENCEGATE_TEST_TOKEN_A"))
        lease = s.acquire(resource, ttl=ttl)
        self.addCleanup(lease.release, False, 0)
        # The next owner, straight to the registry, queues from the cut on:
        # granted once the registry ended A's lease.
        b, granted = fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env("FENCEGATE_TEST_TOKEN_B")), []

        def next_owner():
            lb = b.lock(resource, ttl=5, timeout=30)
            granted.append((lb, time.monotonic()))
        cut.set()  # from here no renewal, refresh or query reaches the registry
        threading.Thread(target=next_owner, daemon=True).start()
        lost, woke = lease.lost, []
        threading.Thread(target=lambda: woke.append((lost.wait(3 * ttl), s.clock.now() / 1e9, time.monotonic())),
                         daemon=True).start()
        late, late_done, readings = [], [], 0
        while True:
            deadline = lease.deadline  # the last confirmed renewal's: it moves no more
            now = s.clock.now() / 1e9  # read before the event and the state: a reading at or after the deadline
            is_set, state = lost.is_set(), lease.state
            if now >= deadline:
                readings += 1
                if not is_set or state in ("HELD", "RENEWING"):
                    late.append((now - deadline, is_set, state))
                if not lease.done.is_set():
                    late_done.append(now - deadline)
            if now >= deadline + 0.5:
                break
            time.sleep(0.002)
        for _ in range(3000):
            if granted:
                break
            time.sleep(0.01)
        self.assertTrue(woke and woke[0][0], "the waiter on lost never woke")
        self.assertEqual(len(granted), 1, "the next owner was never granted")
        lb, b_at = granted[0]
        self.addCleanup(lb.release, False, 0)
        print("\n  %d readings at or after the deadline, %d with lost unset or the lease live; lease.done unset "
              "in %d (the control); the waiter on lost woke %+.3f s from the deadline; B granted %.2f s after "
              "A's lost" % (readings, len(late), len(late_done), woke[0][1] - deadline, b_at - woke[0][2]),
              file=sys.stderr)
        self.assertGreaterEqual(readings, 10)  # 2 ms apart for 0.5 s; fewer only on a machine far too loaded
        self.assertEqual(late, [])
        self.assertLess(woke[0][2], b_at)
        self.assertGreater(lb.fence, lease.fence)
        self.assertEqual(len(late_done), readings, "the control: done, set by the registry's answer, was not late")
        self.assertTrue(any(c[3] == "held" for c in proxy.calls()), "nothing was cut off")


class Elections(unittest.TestCase):
    def test_the_next_candidate_leads_with_a_higher_term(self):
        name = "election/py-primary"
        a = fencegate.Election(fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env("FENCEGATE_TEST_TOKEN_A")), name)
        b = fencegate.Election(fencegate.Session(env("FENCEGATE_TEST_REGISTRY"), token=env("FENCEGATE_TEST_TOKEN_B")), name)
        stop, seen = threading.Event(), []
        self.addCleanup(stop.set)
        lead_a = a.campaign(ttl=5)
        self.assertEqual(a.leader().identity, "worker-a")

        def observe():
            for ld in a.observe(stop):
                seen.append(ld)
        threading.Thread(target=observe, daemon=True).start()
        got = []
        t = threading.Thread(target=lambda: got.append(b.campaign(ttl=5)), daemon=True)
        t.start()
        time.sleep(0.5)
        self.assertEqual(got, [], "B led while A did")
        released = time.monotonic()
        lead_a.release()
        t.join(30)
        self.assertEqual(len(got), 1)
        # B waited its turn in the queue: the release handed over, not the
        # expiry of A's 5 s lease.
        self.assertLess(time.monotonic() - released, 5, "B led only once A's lease could have expired")
        lead_b = got[0]
        self.assertGreater(lead_b.fence, lead_a.fence)
        ld = b.leader()
        self.assertEqual((ld.identity, ld.term, ld.lease), ("worker-b", lead_b.fence, lead_b.lease_id))
        for _ in range(100):
            if len(seen) >= 2:
                break
            time.sleep(0.05)
        self.assertEqual([(x.identity, x.term) for x in seen][:1], [("worker-a", lead_a.fence)])
        self.assertIn(("worker-b", lead_b.fence), [(x.identity, x.term) for x in seen])
        lead_b.release()


def load_tests(loader, tests, pattern):
    missing = [n for n in ENV_NAMES if not os.environ.get(n)]
    if missing:
        raise RuntimeError("tests.realprocess needs %s (cmd/fencegate/python_client_test.go sets them)" % missing)
    return tests


if __name__ == "__main__":
    unittest.main()
