"""lockGrant.v1 and grantStatus.v1 as the client reads them (docs/formats.md).

A grant and a status travel as their canonical text, the exact bytes the
registry's proofs cover; the client keeps those bytes and reads the
fields it needs from them. The parser is strict about structure (every
field, in order, once; printable ASCII; canonical numbers and instants)
and checks that the text is what encoding its fields gives back, so a
text it accepts is one the Go parser (``grant.ParseGrant``) accepts as
the same message. Instants are integers: nanoseconds since the Unix
epoch, at millisecond precision.
"""

import calendar
import hashlib
import re
import struct
import time

from .errors import BadAnswer

GRANT_FIELDS = ("schema", "resource", "owner", "requestId", "lease", "operationRoot", "operationClass", "fenceToken",
                "backendRevision", "policyGeneration", "issuerEpoch", "ttlMs", "issuedAt", "expiresAt", "heldUntil")
"""lockGrant.v1's fields in their fixed order; heldUntil is optional (the held form)."""

STATUS_FIELDS = ("schema", "grant", "state", "backendRevision", "issuerEpoch", "issuedAt", "validUntil")
"""grantStatus.v1's fields in their fixed order."""

MESSAGE_BYTES_MAX = 4096
"""The longest canonical message (grant.MessageBytesMax)."""

_NUMBER = re.compile(r"0|[1-9][0-9]*\Z")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
_INSTANT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z\Z")
_RESOURCE_CHARS = re.compile(r"[a-z0-9._/-]+\Z")
MS = 1_000_000
"""One millisecond in nanoseconds."""


def digest_of(data):
    """``sha256:`` and the lowercase hex of SHA-256(data) (bytes)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def payload_digest(payload):
    """The digest an envelope binds for a payload (bytes, or str as UTF-8):
    what the transaction writes, so that a valid envelope cannot carry
    another write."""
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return digest_of(bytes(payload))


def operation_root(resource, operation_id):
    """The operation root the grant binds (docs/formats.md, "Operation root")."""
    r, o = resource.encode(), operation_id.encode()
    h = hashlib.sha256(b"fencegate/operationRoot/v1\x00" + struct.pack(">Q", len(r)) + r + struct.pack(">Q", len(o)) + o)
    return "sha256:" + h.hexdigest()


def validate_resource(s):
    """Raise ValueError unless s is a canonical resource ID (docs/formats.md,
    "Identifiers"): 1-256 bytes of lowercase letters, digits, '-', '_', '.'
    in '/'-joined segments, none empty, '.' or '..'."""
    if not isinstance(s, str) or not s:
        raise ValueError("empty resource ID")
    if len(s.encode()) > 256:
        raise ValueError("resource ID is %d bytes, limit 256" % len(s.encode()))
    if not _RESOURCE_CHARS.match(s):
        bad = next(c for c in s if not _RESOURCE_CHARS.match(c))
        hint = " (use lower case)" if bad.isupper() else ""
        raise ValueError("resource ID not canonical: %r not allowed%s" % (bad, hint))
    for i, seg in enumerate(s.split("/"), 1):
        if seg == "":
            raise ValueError("resource ID not canonical: empty segment %d" % i)
        if seg in (".", ".."):
            raise ValueError("resource ID not canonical: dot segment %r" % seg)


def parse_instant(s):
    """An instant in 2006-01-02T15:04:05.000Z form, as Unix nanoseconds."""
    m = _INSTANT.match(s)
    if not m:
        raise ValueError("want UTC instant like 2006-01-02T15:04:05.000Z, got %r" % s)
    y, mo, d, h, mi, sec, ms = (int(g) for g in m.groups())
    if not (1970 <= y <= 9999 and 1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1] and h < 24 and mi < 60
            and sec < 60):
        raise ValueError("not a real instant: %r" % s)
    return (calendar.timegm((y, mo, d, h, mi, sec, 0, 0, 0)) * 1000 + ms) * MS


def format_instant(ns):
    """Unix nanoseconds as 2006-01-02T15:04:05.000Z (truncated to the ms)."""
    ms = ns // MS
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def _split(schema, names, required, text):
    """The values of a canonical message's lines, checked for structure."""
    def fail(why):
        raise BadAnswer("fencegate: %s: %s" % (schema, why))
    if not isinstance(text, bytes):
        text = text.encode("utf-8")
    if len(text) > MESSAGE_BYTES_MAX:
        fail("%d bytes, limit %d" % (len(text), MESSAGE_BYTES_MAX))
    if not text.endswith(b"\n"):
        fail("must end with a newline")
    values = []
    for n, line in enumerate(text[:-1].split(b"\n"), 1):
        if any(c < 0x20 or c >= 0x7F for c in line):
            fail("line %d: control or non-ASCII byte" % n)
        name, sep, value = line.decode("ascii").partition(": ")
        if not sep or not value or value != value.strip(" "):
            fail("line %d: want \"name: value\"" % n)
        if len(values) >= len(names) or name != names[len(values)]:
            want = names[len(values)] if len(values) < len(names) else "the end"
            fail("line %d: field %s: want %s" % (n, name, want))
        values.append(value)
    if len(values) < required:
        fail("missing field %s" % names[len(values)])
    return text, values


def _number(schema, name, value, least=0):
    if not _NUMBER.match(value) or int(value) >= 1 << 64:
        raise BadAnswer("fencegate: %s: %s: not a canonical uint64: %r" % (schema, name, value))
    if int(value) < least:
        raise BadAnswer("fencegate: %s: %s: must be at least %d" % (schema, name, least))
    return int(value)


def _instant(schema, name, value):
    try:
        return parse_instant(value)
    except ValueError as e:
        raise BadAnswer("fencegate: %s: %s: %s" % (schema, name, e)) from None


class Grant:
    """A lockGrant.v1, parsed: its fields (instants in Unix ns, held_until
    None for the earlier form), its canonical ``text`` (bytes) and
    ``digest``. Immutable by convention."""

    __slots__ = ("text", "digest", "resource", "owner", "request_id", "lease", "operation_root", "operation_class",
                 "fence_token", "backend_revision", "policy_generation", "issuer_epoch", "ttl_ms", "issued_at",
                 "expires_at", "held_until")

    @classmethod
    def parse(cls, text):
        """Parse a grant's canonical text strictly (BadAnswer otherwise)."""
        text, v = _split("lockGrant.v1", GRANT_FIELDS, len(GRANT_FIELDS) - 1, text)
        s = "lockGrant.v1"
        if v[0] != s:
            raise BadAnswer("fencegate: grant: schema %r" % v[0])
        g = cls()
        g.resource, g.owner, g.request_id, g.lease = v[1], v[2], v[3], v[4]
        if not _DIGEST.match(v[5]):
            raise BadAnswer("fencegate: %s: operationRoot: not a digest" % s)
        g.operation_root, g.operation_class = v[5], v[6]
        g.fence_token = _number(s, "fenceToken", v[7], 1)
        g.backend_revision = _number(s, "backendRevision", v[8], 1)
        g.policy_generation = _number(s, "policyGeneration", v[9])
        g.issuer_epoch = _number(s, "issuerEpoch", v[10], 1)
        g.ttl_ms = _number(s, "ttlMs", v[11], 1)
        g.issued_at = _instant(s, "issuedAt", v[12])
        g.expires_at = _instant(s, "expiresAt", v[13])
        g.held_until = _instant(s, "heldUntil", v[14]) if len(v) > 14 else None
        try:
            validate_resource(g.resource)
        except ValueError as e:
            raise BadAnswer("fencegate: %s: resource: %s" % (s, e)) from None
        if g.expires_at != g.issued_at + g.ttl_ms * MS:
            raise BadAnswer("fencegate: %s: expiresAt must be issuedAt + ttlMs" % s)
        if g.held_until is not None and not g.issued_at <= g.held_until <= g.expires_at:
            raise BadAnswer("fencegate: %s: heldUntil outside [issuedAt, expiresAt]" % s)
        g.text, g.digest = text, digest_of(text)
        if g.encode() != text:
            raise BadAnswer("fencegate: %s: not canonical" % s)
        return g

    def encode(self):
        """The canonical text of the fields (bytes)."""
        lines = [("schema", "lockGrant.v1"), ("resource", self.resource), ("owner", self.owner),
                 ("requestId", self.request_id), ("lease", self.lease), ("operationRoot", self.operation_root),
                 ("operationClass", self.operation_class), ("fenceToken", self.fence_token),
                 ("backendRevision", self.backend_revision), ("policyGeneration", self.policy_generation),
                 ("issuerEpoch", self.issuer_epoch), ("ttlMs", self.ttl_ms),
                 ("issuedAt", format_instant(self.issued_at)), ("expiresAt", format_instant(self.expires_at))]
        if self.held_until is not None:
            lines.append(("heldUntil", format_instant(self.held_until)))
        return "".join("%s: %s\n" % kv for kv in lines).encode("ascii")

    @classmethod
    def build(cls, **fields):
        """A grant from its fields (tests, the scenario runner): the names
        of __slots__ but text and digest, held_until optional."""
        g = cls()
        g.held_until = None
        for k, v in fields.items():
            setattr(g, k, v)
        g.text = g.encode()
        g.digest = digest_of(g.text)
        return g

    def held_statement(self):
        """Whether the grant carries its own HELD statement (heldUntil)."""
        return self.held_until is not None


class Status:
    """A grantStatus.v1, parsed: the grant's digest, the state, instants in
    Unix ns, its canonical ``text``."""

    __slots__ = ("text", "grant", "state", "backend_revision", "issuer_epoch", "issued_at", "valid_until")

    STATES = ("HELD", "EXPIRED", "RELEASED", "REVOKED")

    @classmethod
    def parse(cls, text):
        """Parse a status's canonical text strictly (BadAnswer otherwise)."""
        text, v = _split("grantStatus.v1", STATUS_FIELDS, len(STATUS_FIELDS), text)
        s = "grantStatus.v1"
        if v[0] != s:
            raise BadAnswer("fencegate: status: schema %r" % v[0])
        st = cls()
        if not _DIGEST.match(v[1]):
            raise BadAnswer("fencegate: %s: grant: not a digest" % s)
        if v[2] not in cls.STATES:
            raise BadAnswer("fencegate: %s: state %r" % (s, v[2]))
        st.grant, st.state = v[1], v[2]
        st.backend_revision = _number(s, "backendRevision", v[3], 1)
        st.issuer_epoch = _number(s, "issuerEpoch", v[4], 1)
        st.issued_at = _instant(s, "issuedAt", v[5])
        st.valid_until = _instant(s, "validUntil", v[6])
        if st.valid_until < st.issued_at:
            raise BadAnswer("fencegate: %s: validUntil before issuedAt" % s)
        st.text = text
        if st.encode() != text:
            raise BadAnswer("fencegate: %s: not canonical" % s)
        return st

    def encode(self):
        """The canonical text of the fields (bytes)."""
        lines = [("schema", "grantStatus.v1"), ("grant", self.grant), ("state", self.state),
                 ("backendRevision", self.backend_revision), ("issuerEpoch", self.issuer_epoch),
                 ("issuedAt", format_instant(self.issued_at)), ("validUntil", format_instant(self.valid_until))]
        return "".join("%s: %s\n" % kv for kv in lines).encode("ascii")

    @classmethod
    def build(cls, **fields):
        """A status from its fields (tests, the scenario runner)."""
        st = cls()
        for k, v in fields.items():
            setattr(st, k, v)
        st.text = st.encode()
        return st


class Issued:
    """A registry answer about a grant (wire.Issued): the grant and its
    proof, the status and its proof (status None in a fresh grant's answer:
    the grant's own held statement stands for it), expires_after_ms (how
    long after the request reached the registry the lease expires; 0 when
    not sent) and the per-gate proofs (a list of dicts, passed on
    untouched)."""

    __slots__ = ("grant", "grant_proof", "status", "status_proof", "expires_after_ms", "gate_proofs")

    def __init__(self, grant=None, grant_proof="", status=None, status_proof="", expires_after_ms=0, gate_proofs=None):
        self.grant, self.grant_proof = grant, grant_proof
        self.status, self.status_proof = status, status_proof
        self.expires_after_ms, self.gate_proofs = expires_after_ms, list(gate_proofs or [])

    def statement(self):
        """The answer's own statement about the grant, (state, issued_at,
        valid_until), or None: its status when it carries one, else a fresh
        grant's held statement (wire.Issued.Statement)."""
        if self.status is not None:
            return self.status.state, self.status.issued_at, self.status.valid_until
        if self.grant is not None and self.grant.held_statement():
            return "HELD", self.grant.issued_at, self.grant.held_until
        return None

    @classmethod
    def from_json(cls, body):
        """Parse an IssuedResponse (a dict from the answer's JSON) as the Go
        client does (httpclient.parseIssued): both messages strictly; a
        status about another grant, or gate proofs of the wrong shape, are
        a BadAnswer."""
        def text(k):
            v = body.get(k, "")
            if not isinstance(v, str):
                raise BadAnswer("fencegate: answer: %s is not a string" % k)
            return v
        g = Grant.parse(text("grant"))
        st, sp, gp = None, text("statusProof"), text("grantProof")
        if not (text("status") == "" and sp == "" and g.held_statement() and gp != ""):
            st = Status.parse(text("status"))
            if st.grant != g.digest:
                raise BadAnswer("fencegate: answer: status is about grant %s, not %s" % (st.grant, g.digest))
        gates = body.get("gateProofs") or []
        if not isinstance(gates, list) or len(gates) > 8 or any(
                not isinstance(p, dict) or not isinstance(p.get("gate"), str) or not p.get("grantProof")
                or bool(p.get("statusProof")) != bool(sp) for p in gates):
            raise BadAnswer("fencegate: answer: gateProofs malformed")
        if gp == "" and gates:
            raise BadAnswer("fencegate: answer: gate proofs for a grant without a proof")
        after = body.get("expiresAfterMs", 0)
        if not isinstance(after, int) or isinstance(after, bool):
            raise BadAnswer("fencegate: answer: expiresAfterMs is not an integer")
        return cls(g, gp, st, sp, max(after, 0), gates)
