"""Proves the Python lease core is the Go SDK's machine: it runs every
lease scenario of client/testdata/lease (the files Go's
client/lease_scenario_test.go runs; the format is documented there) and
answers every step as the file expects — the lock sets' (one lease core
for every member), a reader's lease's and the downgrade's (the downgrade's
core) as well as a single lease's. The directory is read, not a list: a
scenario added for Go runs here too, and a command, option, word or answer
this runner does not know, or a line it cannot read, fails it."""

import decimal
import glob
import os
import unittest

from fencegate.core.acquire import AcquireCore
from fencegate.core.downgrade import DowngradeCore
from fencegate.core.lease import (Answer, BuildEnvelope, Downgrading, Granted, LeaseCore, Lost, Ready, Release,
                                  Settle, member_request_id, set_name)
from fencegate.errors import BadAnswer, LeaseExpiredError, NotCertain, ProofStale
from fencegate.grant import MS, Grant, Issued, Status, operation_root, parse_instant
from fencegate.options import Options

from tests import scenariotext

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
REPO_SCENARIOS = os.path.join(ROOT, "client", "testdata", "lease")
SCENARIOS = os.environ.get("FENCEGATE_LEASE_SCENARIOS", REPO_SCENARIOS)
TRANSCRIPT = os.path.join(ROOT, "client", "testdata", "lease_transcript.golden")

T0 = parse_instant("2026-07-19T10:00:00.000Z")  # gatetest.T0
SECOND = 1_000_000_000

# Every command's options and words (client/lease_scenario_test.go's
# scenarioSyntax): anything else on its line is refused. A word list of
# None takes any word.
SYNTAX = {
    "lease": (("ttl", "at", "proof", "sent", "expires-after"), (("read",),)),
    "set": (("members", "ttl", "at", "proof"), ()),
    "acquire-set": (("members", "ttl", "id"), ()),
    "next": (("at",), ()),
    "answer": (("at", "proof", "ended", "expires-after", "fence"),
               (("held", "expired", "refused", "ok", "lost", "granted", "reader"),)),
    "envelope": (("seq", "at", "member"), ()),
    "settle": (("seq", "member"), (None,)),
    "release": (("at",), (("drain", "nodrain"),)),
    "downgrade": (("id", "at"), ()),
    "leftovers": ((), ()),
}


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
    """One file's run: the core under test (a lease's; a set's acquire or
    a downgrade until it answers) and the last step's output."""

    def __init__(self, test, path):
        self.test, self.path = test, path
        self.o = Options().limits()
        self.core = None
        self.acq = None   # a set's acquire, until it hands its lease over
        self.dg = None    # a downgrade, until its answer
        self.call = None
        self.got = ""
        self.grant = None
        self.set = None   # a set's member grants (None: a single lease)

    def fail(self, msg):
        self.test.fail("%s: %s" % (self.step, msg))

    def check_syntax(self, a):
        """Refuse a line with an option or word its command does not take."""
        cmd = a.words[0]
        if cmd not in SYNTAX:
            self.fail("unknown command %r" % cmd)
        opts, words = SYNTAX[cmd]
        for k in a.opts:
            if k not in opts:
                self.fail("%s takes no option %r" % (cmd, k))
        if len(a.words) - 1 > len(words):
            self.fail("%s takes at most %d words" % (cmd, len(words)))
        for i, w in enumerate(a.words[1:]):
            if words[i] is not None and w not in words[i]:
                self.fail("%s: unknown word %r" % (cmd, w))

    def status_for(self, g, state, at, until):
        st = Status.build(grant=g.digest, state=state, backend_revision=1001, issuer_epoch=1,
                          issued_at=at, valid_until=until)
        return Issued(g, "sig:k1:scenario", st, "sig:k1:scenario-status")

    def issued(self, state, at, until):
        return self.status_for(self.grant, state, at, until)

    def do(self, a):
        self.check_syntax(a)
        cmd = a.words[0]
        if cmd == "lease":
            self.lease(a)
        elif cmd == "set":
            self.new_set(a)
        elif cmd == "acquire-set":
            self.acquire_set(a)
        elif cmd == "downgrade":
            self.core.step(secs(a.opts["at"]), Downgrading())
            self.dg = DowngradeCore(self.o, self.grant, "op-a", a.opts["id"])
            self.got = "downgrading"
        elif cmd == "next":
            self.next(secs(a.opts["at"]))
        elif cmd == "answer":
            self.answer(a.words[1], secs(a.opts["at"]), a.opts)
        elif cmd == "envelope":
            r = self.core.step(secs(a.opts["at"]), BuildEnvelope(a.uint("seq", 1), "sha256:" + "ab" * 32,
                                                                 a.uint("member", 0)))
            if r.err is None:
                self.got = "ok"
            elif isinstance(r.err, NotCertain):
                self.got = "not-held"
            elif isinstance(r.err, ProofStale):
                self.got = "proof-stale"
            elif isinstance(r.err, IndexError):
                self.got = "no-member"
            else:
                self.got = str(r.err)
        elif cmd == "settle":
            self.core.step(0, Settle(a.uint("seq", 1), a.words[1], a.uint("member", 0)))
            self.got = ""
        elif cmd == "release":
            self.core.step(secs(a.opts["at"]), Release(len(a.words) < 2 or a.words[1] != "nodrain"))
            self.got = "releasing until=" + stamp(self.core.release_at)
        elif cmd == "leftovers":
            left = self.core.leftovers()
            self.got = "none"
            if left is not None:
                gs, frm = left
                self.got = "release %s at=%s" % (",".join(g.resource for g in gs), stamp(frm) if frm else "none")

    def grant_for(self, resource, lease, request_id, fence, ttl, sent):
        """The scenario's grant of resource: lease, fence and request ID as
        given, TTL ttl (ns), issued at sent."""
        return Grant.build(resource=resource, owner="worker-a", request_id=request_id, lease=lease,
                           operation_root=operation_root(resource, "op-a"), operation_class="settle",
                           fence_token=fence, backend_revision=1000 + fence, policy_generation=1, issuer_epoch=1,
                           ttl_ms=ttl // MS, issued_at=sent, expires_at=sent + ttl)

    def lease(self, a):
        sent = secs(a.opts["at"]) if "at" in a.opts else T0
        ttl = secs(a.opts["ttl"]) - T0
        resource = "scn/lease/_read" if len(a.words) > 1 else "scn/lease"
        self.grant, self.set = self.grant_for(resource, "lease-a", "req-lease-a", 1, ttl, sent), None
        proof = secs(a.opts["proof"]) if "proof" in a.opts else sent + ttl
        issued, frm = self.issued("HELD", sent, proof), sent
        if "sent" in a.opts:
            issued.expires_after_ms = (secs(a.opts["expires-after"]) - T0) // MS
            frm = self.acquired(secs(a.opts["sent"]), sent, issued)
        self.core = LeaseCore(self.o, Granted(issued, "op-a", frm))
        self.got = self.core.state

    def set_members(self, n, request_id, ttl, sent):
        """A set's member grants under request_id, issued at sent: member
        i is scn/mI, lease lease-mI, fence I+1."""
        self.set = [self.grant_for("scn/m%d" % i, "lease-m%d" % i, member_request_id(request_id, i), i + 1, ttl, sent)
                    for i in range(n)]
        self.grant = self.set[0]

    def set_answer(self, state, at, until, ended=None):
        """Every member's answer at at: state, valid until until; member
        ended EXPIRED."""
        return [self.status_for(g, "EXPIRED" if i == ended else state, at, until) for i, g in enumerate(self.set)]

    def new_set(self, a):
        sent = secs(a.opts["at"]) if "at" in a.opts else T0
        ttl = secs(a.opts["ttl"]) - T0
        self.set_members(a.uint("members", 2), "req-set", ttl, sent)
        proof = secs(a.opts["proof"]) if "proof" in a.opts else sent + ttl
        answers = self.set_answer("HELD", sent, proof)
        self.core = LeaseCore(self.o, Granted(answers[0], "op-a", sent, answers))
        self.got = self.core.state

    def acquire_set(self, a):
        members = ["scn/m%d" % i for i in range(a.uint("members", 2))]
        ttl = secs(a.opts["ttl"]) - T0
        req = {"resource": set_name(members), "operationId": "op-a", "operationClass": "settle",
               "requestId": a.opts["id"], "ttlMs": ttl // MS, "waitMs": 30_000}
        # The shell's fresh request ID, when the registry says the old one's
        # grants already ended: the old one's with "-2" (as Go's runner).
        self.acq = AcquireCore(self.o, req, lambda: a.opts["id"] + "-2", lambda: 0.5, members)
        self.got = "REQUESTED"

    @staticmethod
    def call_name(c):
        """A call as the scenarios print it (callName in Go's runner)."""
        if c.set_request is not None:
            return "%s id=%s set=%d" % (c.kind, c.set_request["requestId"], len(c.set_request["members"]))
        if c.kind in ("acquire", "query-request", "downgrade"):
            return "%s id=%s" % (c.kind, c.request["requestId"])
        if c.set is not None:
            return "%s set=%d" % (c.kind, len(c.set))
        return c.kind

    def next(self, at):
        core = self.acq or self.dg or self.core
        r = core.next(at)
        self.got = self.call_name(r.call) if r.call is not None else "none"
        if r.call is None and r.wake is not None:
            self.got += " wake=" + stamp(r.wake)
        if r.call is not None:
            self.call = r.call

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
        if self.acq is not None:
            self.acquire_answer(kind, at, opts)
            return
        if self.dg is not None:
            self.downgrade_answer(kind, at, opts)
            return
        ended = None
        if "ended" in opts:
            if self.set is None:
                self.fail("ended= answers a set's call")
            ended = scenariotext.Args("ended=" + opts["ended"]).uint("ended", 0)
        if kind == "lost":
            self.core.step(at, Lost(self.call))
        elif kind in ("held", "expired"):
            state, until = ("HELD", secs(opts["proof"])) if kind == "held" else ("EXPIRED", at)
            if self.set is not None:
                answers = self.set_answer(state, at, until, ended)
                self.core.step(at, Answer(self.call, answers[0], None, answers))
            else:
                self.core.step(at, Answer(self.call, self.issued(state, at, until)))
        elif kind == "refused":
            self.core.step(at, Answer(self.call, None, LeaseExpiredError("lease expired")))
        elif kind == "ok":
            self.core.step(at, Answer(self.call, Issued()))
        else:
            self.fail("answer %r to a lease's call" % kind)
        self.got = self.core.state

    def acquire_answer(self, kind, at, opts):
        """A set's acquire: granted (every member HELD under its member
        request ID) hands the lease over; lost leaves it REQUESTED."""
        if kind == "lost":
            self.acq.step(at, Lost(self.call))
        elif kind == "granted":
            req = self.call.set_request
            ttl = req["ttlMs"] * MS
            self.set_members(len(req["members"]), req["requestId"], ttl, at)
            ended = scenariotext.Args("ended=" + opts["ended"]).uint("ended", 0) if "ended" in opts else None
            answers = self.set_answer("HELD", at, at + ttl)
            if ended is not None:  # a member whose grant already ended: RELEASED
                answers[ended] = self.status_for(answers[ended].grant, "RELEASED", at, at + ttl)
            if "expires-after" in opts:
                for x in answers:
                    x.expires_after_ms = (secs(opts["expires-after"]) - T0) // MS
            self.acq.step(at, Answer(self.call, answers[0], None, answers))
        else:
            self.fail("answer %r to an acquire" % kind)
        if self.acq.done and self.acq.err is not None:
            self.fail("the acquire ended: %s" % self.acq.err)
        if self.acq.done:
            a, self.acq = self.acq, None
            self.core = LeaseCore(self.o, Granted(a.issued, "op-a", a.lease_from(at), a.issued_set))
            self.got = self.core.state
        else:
            self.got = "REQUESTED"

    def downgrade_answer(self, kind, at, opts):
        """A downgrade: reader (the reader's grant, at the write lease's
        fence unless fence= says otherwise), lost, refused."""
        if kind == "lost":
            self.dg.step(at, Lost(self.call))
        elif kind == "refused":
            self.dg.step(at, Answer(self.call, None, LeaseExpiredError("lease expired")))
        elif kind == "reader":
            ttl = self.grant.ttl_ms * MS
            fence = scenariotext.Args("fence=" + opts.get("fence", str(self.grant.fence_token))).uint("fence", 0)
            self.grant = self.grant_for(self.grant.resource + "/_read", "lease-r", "req-down", fence, ttl, at)
            until = secs(opts["proof"]) if "proof" in opts else at + ttl
            self.dg.step(at, Answer(self.call, self.issued("HELD", at, until)))
        else:
            self.fail("answer %r to a downgrade" % kind)
        if not self.dg.done:
            self.got = "downgrading"
            return
        dg, self.dg = self.dg, None
        if dg.granted is not None:
            self.core = LeaseCore(self.o, dg.granted)
            self.got = self.core.state
        elif isinstance(dg.err, BadAnswer):
            self.got = "bad-answer"
        else:
            self.got = "refused"

    def run(self):
        """Run the file; return its transcript: every step's answer, one
        line each ("FILE:LINE: STEP -> ANSWER"), as Go's runner writes it."""
        with open(self.path, encoding="utf-8") as f:
            lines = scenariotext.lines(f)
        transcript = []
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
            transcript.append("%s:%d: %s -> %s" % (os.path.basename(self.path), ln.n, step.strip(), self.got))
        return transcript


class LeaseScenarios(unittest.TestCase):
    """One test per scenario file (added below, from the directory)."""

    def test_directory_has_scenarios(self):
        self.assertTrue(FILES, "no lease scenarios in %s" % SCENARIOS)


class ScenarioControls(unittest.TestCase):
    """The negative controls: a core broken on purpose in one rule of a
    lock set or a downgrade fails the shared scenario that states the rule
    (and the unbroken core passes it: LeaseScenarios). Each mutant is a
    patch of this test's, never a setting of the product."""

    def broken(self, path, obj, name, mutant, line):
        """The scenario at path must fail at its line number line, on the
        expectation (not on a line it cannot read), with obj.name replaced
        by mutant."""
        orig = getattr(obj, name)
        setattr(obj, name, mutant(orig))
        try:
            with self.assertRaises(self.failureException, msg="%s passed with %s.%s broken" % (path, obj.__name__, name)) as cm:
                Scenario(self, os.path.join(REPO_SCENARIOS, path)).run()
        finally:
            setattr(obj, name, orig)
        self.assertIn("%s:%d: " % (path, line), str(cm.exception))
        self.assertIn("\n  got ", str(cm.exception))

    def test_a_set_that_ignores_one_members_end(self):
        def mutant(orig):
            def judge_set(core, answers):
                held, refused = orig(core, answers)
                return (True, False) if refused else (held, refused)  # one member EXPIRED: keep the set
            return judge_set
        self.broken("set_renewal.txt", LeaseCore, "_judge_set", mutant, 19)

    def test_a_set_acquire_that_asks_by_request_id(self):
        def mutant(orig):
            def next_(core, now):
                members, core.members = core.members, (None if core.lost else core.members)  # as a single acquire
                try:
                    return orig(core, now)
                finally:
                    core.members = members
            return next_
        self.broken("set_acquire_lost.txt", AcquireCore, "next", mutant, 12)

    def test_a_set_taken_in_part(self):
        def mutant(orig):
            def answered_set(core, now, answers):
                if core._check_set(answers) is None:  # a member that ended: take the set all the same
                    core.issued_set = list(answers)
                    core._finish(answers[0], None)
                    return
                orig(core, now, answers)
            return answered_set
        self.broken("set_acquire_member_ended.txt", AcquireCore, "_answered_set", mutant, 9)

    def test_leftovers_without_the_drain(self):
        def mutant(orig):
            def leftovers(core):
                left = orig(core)
                return left if left is None else (left[0], 0)
            return leftovers
        self.broken("set_leftovers.txt", LeaseCore, "leftovers", mutant, 13)

    def test_a_downgrade_that_lets_the_writer_write(self):
        def mutant(orig):
            def step(core, now, inp):
                return core._ready(Ready()) if isinstance(inp, Downgrading) else orig(core, now, inp)
            return step
        self.broken("downgrade.txt", LeaseCore, "step", mutant, 13)

    def test_a_downgrade_resent_under_a_fresh_id(self):
        def mutant(orig):
            def answer(core, now, call, issued, err):
                orig(core, now, call, issued, err)
                if not core.done:
                    core.req["requestId"] += "-again"
            return answer
        self.broken("downgrade.txt", DowngradeCore, "_answer", mutant, 18)

    def test_a_reader_that_never_expires(self):
        def mutant(orig):
            def query_answer(core, now, call, issued, err, late):
                if issued is not None and issued.status is not None and issued.status.state == "EXPIRED":
                    return
                orig(core, now, call, issued, err, late)
            return query_answer
        self.broken("read_lease.txt", LeaseCore, "_query_answer", mutant, 18)


class ScenarioTranscript(unittest.TestCase):
    """Every step's answer of every scenario, those without an expectation
    too, is Go's core's answer: the transcript Go's runner wrote
    (client/testdata/lease_transcript.golden, go test ./client -run
    TestLeaseScenarios -update-transcript), byte for byte."""

    def test_every_answer_is_gos(self):
        got = []
        for path in sorted(glob.glob(os.path.join(REPO_SCENARIOS, "*.txt"))):
            got.extend(Scenario(self, path).run())
        with open(TRANSCRIPT, encoding="utf-8") as f:
            want = f.read().split("\n")
        self.assertEqual(got + [""], want)


class ScenarioCoverage(unittest.TestCase):
    """Every command and answer this runner reads is used by a scenario
    file: a story dropped from the directory (a lock set's, a downgrade's)
    fails here, not silently (TestLeaseScenariosCoverTheFormat in Go)."""

    def test_every_command_and_answer_is_used(self):
        used = set()
        for path in glob.glob(os.path.join(REPO_SCENARIOS, "*.txt")):
            with open(path, encoding="utf-8") as f:
                for ln in scenariotext.lines(f):
                    a = scenariotext.Args(ln.text.partition("->")[0])
                    used.add(a.words[0])
                    if a.words[0] in ("answer", "lease") and len(a.words) > 1:
                        used.add(a.words[0] + " " + a.words[1])
        want = set(SYNTAX) | {"answer " + k for k in SYNTAX["answer"][1][0]} | {"lease read"}
        self.assertEqual(want - used, set(), "commands or answers no scenario uses")


FILES = sorted(glob.glob(os.path.join(SCENARIOS, "*.txt")))
for _path in FILES:
    _name = "test_" + os.path.basename(_path)[:-len(".txt")]
    setattr(LeaseScenarios, _name, (lambda p: lambda self: None if Scenario(self, p).run() else None)(_path))


if __name__ == "__main__":
    unittest.main()
