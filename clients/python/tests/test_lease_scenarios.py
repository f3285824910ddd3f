"""Proves the Python lease core is the Go SDK's machine: it runs every
lease scenario of client/testdata/lease (the files Go's
client/lease_scenario_test.go runs; the format is documented there) and
answers every step as the file expects. The directory is read, not a
list: a scenario added for Go runs here too, and a command or answer this
runner does not know, or a line it cannot read, fails it."""

import decimal
import glob
import os
import unittest

from fencegate.core.acquire import AcquireCore
from fencegate.core.lease import (Answer, BuildEnvelope, Granted, LeaseCore, Lost, Release, Settle)
from fencegate.errors import LeaseExpiredError, NotCertain, ProofStale
from fencegate.grant import MS, Grant, Issued, Status, operation_root, parse_instant
from fencegate.options import Options

from tests import scenariotext

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCENARIOS = os.environ.get("FENCEGATE_LEASE_SCENARIOS", os.path.join(ROOT, "client", "testdata", "lease"))

T0 = parse_instant("2026-07-19T10:00:00.000Z")  # gatetest.T0
SECOND = 1_000_000_000


def secs(v):
    """An option's seconds as an instant, truncated to the nanosecond as Go's
    time.Duration(f * float64(time.Second)) does."""
    return T0 + int(float(v) * float(SECOND))


def stamp(t):
    """An instant as the seconds after T0, as Go's
    strconv.FormatFloat(d.Seconds(), 'f', -1, 64) prints them."""
    d = t - T0
    sec, nsec = abs(d) // SECOND, abs(d) % SECOND
    x = float(sec) + float(nsec) / 1e9
    s = format(decimal.Decimal(repr(x)), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return ("-" if d < 0 else "") + s


class Scenario:
    """One file's run: the core under test and the last step's output."""

    def __init__(self, test, path):
        self.test, self.path = test, path
        self.o = Options().limits()
        self.core = None
        self.call = None
        self.got = ""
        self.grant = None

    def fail(self, msg):
        self.test.fail("%s: %s" % (self.step, msg))

    def issued(self, state, at, until):
        st = Status.build(grant=self.grant.digest, state=state, backend_revision=1001, issuer_epoch=1,
                          issued_at=at, valid_until=until)
        return Issued(self.grant, "sig:k1:scenario", st, "sig:k1:scenario-status")

    def do(self, a):
        cmd = a.words[0]
        if cmd == "lease":
            self.lease(a)
        elif cmd == "next":
            r = self.core.next(secs(a.opts["at"]))
            self.got = r.call.kind if r.call is not None else "none"
            if r.call is None and r.wake is not None:
                self.got += " wake=" + stamp(r.wake)
            if r.call is not None:
                self.call = r.call
        elif cmd == "answer":
            self.answer(a.words[1], secs(a.opts["at"]), a.opts)
        elif cmd == "envelope":
            r = self.core.step(secs(a.opts["at"]), BuildEnvelope(a.uint("seq", 1), "sha256:" + "ab" * 32))
            if r.err is None:
                self.got = "ok"
            elif isinstance(r.err, NotCertain):
                self.got = "not-held"
            elif isinstance(r.err, ProofStale):
                self.got = "proof-stale"
            else:
                self.got = str(r.err)
        elif cmd == "settle":
            self.core.step(0, Settle(a.uint("seq", 1), a.words[1]))
            self.got = ""
        elif cmd == "release":
            self.core.step(secs(a.opts["at"]), Release(len(a.words) < 2 or a.words[1] != "nodrain"))
            self.got = "releasing until=" + stamp(self.core.release_at)
        else:
            self.fail("unknown command %r" % cmd)

    def lease(self, a):
        sent = secs(a.opts["at"]) if "at" in a.opts else T0
        ttl = secs(a.opts["ttl"]) - T0
        self.grant = Grant.build(resource="scn/lease", owner="worker-a", request_id="req-lease-a", lease="lease-a",
                                 operation_root=operation_root("scn/lease", "op-a"), operation_class="settle",
                                 fence_token=1, backend_revision=1001, policy_generation=1, issuer_epoch=1,
                                 ttl_ms=ttl // MS, issued_at=sent, expires_at=sent + ttl)
        proof = secs(a.opts["proof"]) if "proof" in a.opts else sent + ttl
        issued, frm = self.issued("HELD", sent, proof), sent
        if "sent" in a.opts:
            issued.expires_after_ms = (secs(a.opts["expires-after"]) - T0) // MS
            frm = self.acquired(secs(a.opts["sent"]), sent, issued)
        self.core = LeaseCore(self.o, Granted(issued, "op-a", frm))
        self.got = self.core.state

    def acquired(self, sent, at, issued):
        """The acquire's core, sent at sent and answered at at: the instant
        the lease counts from."""
        req = {"resource": self.grant.resource, "operationId": "op-a", "operationClass": self.grant.operation_class,
               "requestId": self.grant.request_id, "ttlMs": self.grant.ttl_ms, "waitMs": 30_000}
        a = AcquireCore(self.o, req, lambda: "req-next", lambda: 0.5)
        call = a.next(sent).call
        a.step(at, Answer(call, issued, None))
        if not a.done or a.err is not None:
            self.fail("the acquire's core did not take the grant: %s" % a.err)
        return a.lease_from(at)

    def answer(self, kind, at, opts):
        if kind == "lost":
            self.core.step(at, Lost(self.call))
        elif kind == "held":
            self.core.step(at, Answer(self.call, self.issued("HELD", at, secs(opts["proof"]))))
        elif kind == "expired":
            self.core.step(at, Answer(self.call, self.issued("EXPIRED", at, at)))
        elif kind == "refused":
            self.core.step(at, Answer(self.call, None, LeaseExpiredError("lease expired")))
        elif kind == "ok":
            self.core.step(at, Answer(self.call, Issued()))
        else:
            self.fail("unknown answer %r" % kind)
        self.got = self.core.state

    def run(self):
        with open(self.path, encoding="utf-8") as f:
            lines = scenariotext.lines(f)
        for ln in lines:
            step, _, want = ln.text.partition("->")
            self.step = "%s:%d: %s" % (self.path, ln.n, step.strip())
            try:
                self.do(scenariotext.Args(step))
            except (KeyError, ValueError, TypeError, IndexError) as e:
                # A line this runner cannot read (an option missing, a
                # number that is not one) fails its file, naming the line.
                raise self.test.failureException("%s: cannot read the line: %r" % (self.step, e)) from e
            want = want.strip()
            if want and self.got != want:
                self.test.fail("%s\n  got  %s\n  want %s" % (self.step, self.got, want))


class LeaseScenarios(unittest.TestCase):
    """One test per scenario file (added below, from the directory)."""

    def test_directory_has_scenarios(self):
        self.assertTrue(FILES, "no lease scenarios in %s" % SCENARIOS)


FILES = sorted(glob.glob(os.path.join(SCENARIOS, "*.txt")))
for _path in FILES:
    _name = "test_" + os.path.basename(_path)[:-len(".txt")]
    setattr(LeaseScenarios, _name, (lambda p: lambda self: Scenario(self, p).run())(_path))


if __name__ == "__main__":
    unittest.main()
