// Shared fixtures for the grant tests: a fixed grant, status and keys whose
// bytes, digests and proofs are pinned in testdata/vectors.json.
package grant

import (
	"testing"
	"time"
)

func fixedTime(s string) time.Time {
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		panic(err)
	}
	return t
}

// testGrant is the spec's example grant, made canonical.
func testGrant() *Grant {
	return &Grant{
		Resource:         "invoice-batch/2026-07-19",
		Owner:            "worker-settlement-7",
		RequestID:        "req-8c1f",
		Lease:            "lease-91",
		OperationRoot:    OperationRoot("invoice-batch/2026-07-19", "settle-2026-07-19"),
		OperationClass:   "settle",
		FenceToken:       8842,
		BackendRevision:  1920184,
		PolicyGeneration: 12,
		IssuerEpoch:      37,
		TTLMs:            10000,
		IssuedAt:         fixedTime("2026-07-19T10:00:00.000Z"),
		ExpiresAt:        fixedTime("2026-07-19T10:00:10.000Z"),
	}
}

// testGrantHeld is testGrant in the held-statement form: HELD from
// issuedAt for 5 s (a 5 s status TTL, well inside expiresAt minus a
// 500 ms skew bound).
func testGrantHeld() *Grant {
	g := testGrant()
	g.HeldUntil = fixedTime("2026-07-19T10:00:05.000Z")
	return g
}

func testStatus(g *Grant) *Status {
	return &Status{
		Grant:           g.Digest(),
		State:           StateHeld,
		BackendRevision: 1920184,
		IssuerEpoch:     37,
		IssuedAt:        fixedTime("2026-07-19T10:00:00.000Z"),
		ValidUntil:      fixedTime("2026-07-19T10:00:05.000Z"),
	}
}

// testSeed returns n bytes 0x01, 0x02, ... offset by salt: fixed key
// material that another implementation can reproduce from the vectors.
func testSeed(salt byte) []byte {
	b := make([]byte, SecretBytes)
	for i := range b {
		b[i] = byte(i+1) + salt
	}
	return b
}

func testEdKey(t testing.TB, id string, salt byte) *SigningKey {
	t.Helper()
	k, err := NewSigningKey(AlgEd25519, id, testSeed(salt))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testMacKey(t testing.TB, id string, salt byte) *SigningKey {
	t.Helper()
	k, err := NewSigningKey(AlgHMACSHA256, id, testSeed(salt))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// bundleEntry returns the bundle entry for k; HMAC keys are written to dir.
func bundleEntry(t testing.TB, dir string, k *SigningKey, state KeyState) BundleKey {
	t.Helper()
	e := BundleKey{KeyID: k.KeyID, Alg: k.Alg, MinEpoch: 1, State: state}
	if k.Alg == AlgEd25519 {
		e.PublicKey = b64.EncodeToString(k.PublicKey())
		return e
	}
	e.SecretFile = k.KeyID + ".key"
	writeFile(t, dir+"/"+e.SecretFile, k.MarshalKeyFile())
	return e
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := WriteFileAtomic(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testVerifier trusts an Ed25519 key "k1" and an HMAC key "m1".
func testVerifier(t testing.TB) (*Verifier, *SigningKey, *SigningKey) {
	t.Helper()
	dir := t.TempDir()
	ed, mac := testEdKey(t, "k1", 0), testMacKey(t, "m1", 100)
	b, err := NewBundle(BundleFile{Version: 1, Keys: []BundleKey{
		bundleEntry(t, dir, ed, KeyActive), bundleEntry(t, dir, mac, KeyActive),
	}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return NewVerifier(b, 0), ed, mac
}

func mustSign(t testing.TB, k *SigningKey, m Message) string {
	t.Helper()
	p, err := k.Sign(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
