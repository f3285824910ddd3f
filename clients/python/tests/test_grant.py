"""Proves the client reads grants and statuses as the Go parser does: the
golden vectors of grant/testdata parse, give their digests and encode back
byte for byte, the operation root matches its vector, and texts the Go
parser refuses (out of order, non-canonical numbers and instants, a
missing newline) are refused here too."""

import json
import os
import unittest

from fencegate.errors import BadAnswer
from fencegate.grant import Grant, Issued, Status, format_instant, operation_root, parse_instant, validate_resource

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VECTORS = os.path.join(ROOT, "grant", "testdata")


def vector(name):
    with open(os.path.join(VECTORS, name), "rb") as f:
        return f.read()


class GoldenVectors(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(VECTORS, "vectors.json")) as f:
            self.v = json.load(f)

    def test_grants_and_status(self):
        for key, cls in (("grant", Grant), ("grantHeld", Grant), ("status", Status)):
            text = vector(self.v[key]["file"])
            m = cls.parse(text)
            self.assertEqual(m.encode(), text, key)
            if cls is Grant:
                self.assertEqual(m.digest, self.v[key]["digest"], key)
        held = Grant.parse(vector("grant-held.txt"))
        self.assertTrue(held.held_statement())
        self.assertFalse(Grant.parse(vector("grant.txt")).held_statement())
        self.assertEqual(held.fence_token, 8842)
        self.assertEqual(held.expires_at - held.issued_at, 10_000_000_000)
        self.assertEqual(Status.parse(vector("status.txt")).grant, self.v["grant"]["digest"])

    def test_operation_root(self):
        r = self.v["operationRoot"]
        self.assertEqual(operation_root(r["resource"], r["operationId"]), r["root"])

    def test_batch_proof_carried_unchanged(self):
        # A registry signing batch proofs (serve --grant-batch-proofs): the
        # client keeps the proof text as it came and puts it in the
        # envelope byte for byte; the gate verifies it, the client never does.
        from fencegate.core.lease import envelope_json
        held, proof = vector("grant-held.txt").decode(), self.v["batch"]["proofs"][1]
        self.assertTrue(proof.startswith("batch:"))
        fresh = Issued.from_json({"grant": held, "grantProof": proof, "status": "", "statusProof": ""})
        self.assertEqual(fresh.grant_proof, proof)
        env = json.loads(envelope_json(fresh, "settle-2026-07-19", 1, "sha256:" + "0" * 64))
        self.assertEqual(env["grantProof"], proof)

    def test_issued_from_json(self):
        g, st = vector("grant.txt").decode(), vector("status.txt").decode()
        is_ = Issued.from_json({"grant": g, "grantProof": "sig:k1:x", "status": st, "statusProof": "sig:k1:y",
                                "expiresAfterMs": 10000})
        self.assertEqual(is_.statement()[0], "HELD")
        self.assertEqual(is_.expires_after_ms, 10000)
        held = vector("grant-held.txt").decode()
        fresh = Issued.from_json({"grant": held, "grantProof": "sig:k1:x", "status": "", "statusProof": ""})
        self.assertIsNone(fresh.status)
        self.assertEqual(fresh.statement()[2], fresh.grant.held_until)
        # a status about another grant, and a fresh answer of the earlier form without its status
        with self.assertRaises(BadAnswer):
            Issued.from_json({"grant": held, "grantProof": "sig:k1:x", "status": st, "statusProof": "sig:k1:y"})
        with self.assertRaises(BadAnswer):
            Issued.from_json({"grant": g, "grantProof": "sig:k1:x", "status": "", "statusProof": ""})


class Strictness(unittest.TestCase):
    def test_refused(self):
        good = vector("grant.txt")
        cases = {
            "no final newline": good[:-1],
            "fields out of order": good.replace(b"owner:", b"xowner:"),
            "leading zero": good.replace(b"fenceToken: 8842", b"fenceToken: 08842"),
            "zero fence": good.replace(b"fenceToken: 8842", b"fenceToken: 0"),
            "sign": good.replace(b"fenceToken: 8842", b"fenceToken: +8842"),
            "instant not canonical": good.replace(b"10:00:00.000Z", b"10:00:00Z"),
            "30 February": good.replace(b"2026-07-19T10:00:00.000Z", b"2026-02-30T10:00:00.000Z"),
            "trailing space": good.replace(b"settle\n", b"settle \n"),
            "tab": good.replace(b"settle\n", b"set\ttle\n"),
            "upper-case resource": good.replace(b"invoice-batch", b"Invoice-batch"),
            "expiry not issuedAt + ttl": good.replace(b"ttlMs: 10000", b"ttlMs: 10001"),
            "unknown field": good + b"extra: 1\n",
            "above uint64": good.replace(b"fenceToken: 8842", b"fenceToken: 18446744073709551616"),
        }
        for why, text in cases.items():
            with self.subTest(why), self.assertRaises(BadAnswer):
                Grant.parse(text)

    def test_instants(self):
        self.assertEqual(format_instant(parse_instant("2026-07-19T10:00:00.123Z")), "2026-07-19T10:00:00.123Z")
        for bad in ("2026-07-19T10:00:00.123", "1969-12-31T23:59:59.999Z", "2026-13-01T00:00:00.000Z"):
            with self.subTest(bad), self.assertRaises(ValueError):
                parse_instant(bad)

    def test_resources(self):
        validate_resource("invoice-batch/2026-07-19")
        for bad in ("", "a//b", "/a", "a/", "a/./b", "A", "a b", "x" * 257, "é"):
            with self.subTest(bad), self.assertRaises(ValueError):
                validate_resource(bad)


if __name__ == "__main__":
    unittest.main()
