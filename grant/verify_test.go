// Tests that Verify accepts exactly the proofs the trust bundle allows: each
// rejection class, domain separation, tamper detection, and the cache never
// outliving a key's retirement or an epoch's revocation.
package grant

import (
	"errors"
	"math/big"
	"testing"
)

func TestVerifyAccepts(t *testing.T) {
	v, ed, mac := testVerifier(t)
	g := testGrant()
	s := testStatus(g)
	for _, k := range []*SigningKey{ed, mac} {
		for _, m := range []Message{g, s} {
			if err := v.Verify(m, mustSign(t, k, m)); err != nil {
				t.Errorf("%s %s: %v", k.Alg, m.Schema(), err)
			}
		}
	}
}

func TestVerifyRejects(t *testing.T) {
	v, ed, mac := testVerifier(t)
	g := testGrant()
	good := mustSign(t, ed, g)
	goodMac := mustSign(t, mac, g)
	stranger := testEdKey(t, "k1", 50) // same ID, other key material

	otherEpoch := testGrant()
	otherEpoch.IssuerEpoch = 3

	p, _ := ParseProof(good)
	highS := p
	highS.Bytes = append([]byte(nil), p.Bytes...)
	addL(highS.Bytes[32:]) // S+L: same point equation, non-canonical

	tests := []struct {
		name  string
		m     Message
		proof string
		want  error
	}{
		{"garbage", g, "nonsense", ErrMalformedProof},
		{"unknown prefix", g, "rsa" + good[3:], ErrMalformedProof},
		{"padded base64", g, good + "=", ErrMalformedProof},
		{"truncated", g, good[:len(good)-4], ErrMalformedProof},
		{"unknown key", g, mustSign(t, testEdKey(t, "k9", 9), g), ErrUnknownKey},
		{"ed key with mac prefix", g, "mac:k1:" + goodMac[len("mac:m1:"):], ErrAlgMismatch},
		{"mac key with sig prefix", g, "sig:m1:" + good[len("sig:k1:"):], ErrAlgMismatch},
		{"wrong key material", g, mustSign(t, stranger, g), ErrBadSignature},
		{"other message", otherEpoch, good, ErrBadSignature},
		{"non-canonical S", g, highS.String(), ErrNonCanonicalSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := v.Verify(tc.m, tc.proof); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// addL adds the group order L to the little-endian 32-byte scalar s.
func addL(s []byte) {
	n := new(big.Int).SetBytes(reverse(s))
	l := new(big.Int).SetBytes(reverse(groupOrder[:]))
	n.Add(n, l)
	out := reverse(n.FillBytes(make([]byte, 32)))
	copy(s, out)
}

func reverse(b []byte) []byte {
	r := make([]byte, len(b))
	for i := range b {
		r[len(b)-1-i] = b[i]
	}
	return r
}

func TestScalarCanonical(t *testing.T) {
	l := groupOrder
	below := l
	below[0]--
	if scalarCanonical(l[:]) || !scalarCanonical(below[:]) || !scalarCanonical(make([]byte, 32)) {
		t.Fatal("scalarCanonical boundary wrong")
	}
}

// TestDomainSeparation presents a proof made for one message type as a
// proof for the other. Both messages are built to be valid, so only the
// domain tag can tell them apart.
func TestDomainSeparation(t *testing.T) {
	v, ed, mac := testVerifier(t)
	g := testGrant()
	s := testStatus(g)
	for _, k := range []*SigningKey{ed, mac} {
		gp, sp := mustSign(t, k, g), mustSign(t, k, s)
		if err := v.Verify(s, gp); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: grant proof as status proof: %v", k.Alg, err)
		}
		if err := v.Verify(g, sp); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: status proof as grant proof: %v", k.Alg, err)
		}
		// Same digest, other schema: the tag alone must separate them.
		if err := v.VerifyDigest(SchemaStatus, g.Digest(), g.IssuerEpoch, gp); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: grant digest under status domain: %v", k.Alg, err)
		}
	}
}

// TestSingleByteChange flips every byte of a signed grant and status to
// every other printable value: either the parser rejects it or the proof
// no longer verifies. Nothing tampered is ever accepted.
func TestSingleByteChange(t *testing.T) {
	v, ed, mac := testVerifier(t)
	g := testGrant()
	s := testStatus(g)
	for _, k := range []*SigningKey{ed, mac} {
		checkTamper(t, v, g.Encode(), mustSign(t, k, g), func(b []byte) (Message, error) { return ParseGrant(b) })
		checkTamper(t, v, s.Encode(), mustSign(t, k, s), func(b []byte) (Message, error) { return ParseStatus(b) })
	}
}

func checkTamper(t *testing.T, v *Verifier, orig []byte, proof string, parse func([]byte) (Message, error)) {
	t.Helper()
	parsedOK := 0
	for i := range orig {
		for c := 0; c < 256; c++ {
			if byte(c) == orig[i] {
				continue
			}
			b := append([]byte(nil), orig...)
			b[i] = byte(c)
			m, err := parse(b)
			if err != nil {
				continue
			}
			parsedOK++
			if err := v.Verify(m, proof); err == nil {
				t.Fatalf("byte %d changed to %q still verifies", i, byte(c))
			}
		}
	}
	if parsedOK == 0 {
		t.Fatal("no tampered variant parsed: the test exercised only the parser")
	}
}

func TestEpochPolicy(t *testing.T) {
	dir := t.TempDir()
	old, cur := testEdKey(t, "old", 1), testEdKey(t, "cur", 2)
	eOld := bundleEntry(t, dir, old, KeyVerifyOnly)
	eOld.MinEpoch, eOld.MaxEpoch = 1, 36
	eCur := bundleEntry(t, dir, cur, KeyActive)
	eCur.MinEpoch = 37
	f := BundleFile{Version: 1, Keys: []BundleKey{eOld, eCur}}
	b, err := NewBundle(f, dir)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(b, 0)
	g := testGrant() // epoch 37
	if err := v.Verify(g, mustSign(t, old, g)); !errors.Is(err, ErrEpochNotAllowed) {
		t.Fatalf("old key signing epoch 37: %v", err)
	}
	if err := v.Verify(g, mustSign(t, cur, g)); err != nil {
		t.Fatalf("cur key signing epoch 37: %v", err)
	}
	proof := mustSign(t, cur, g)
	if err := f.RevokeBelow(38); err != nil {
		t.Fatal(err)
	}
	b2, _ := NewBundle(f, dir)
	if err := v.Replace(b2); err != nil {
		t.Fatal(err)
	}
	// The verification above is cached; the revocation must still win.
	if err := v.Verify(g, proof); !errors.Is(err, ErrEpochRevoked) {
		t.Fatalf("epoch 37 after revokedBelowEpoch 38: %v", err)
	}
	if err := f.RevokeBelow(38); err == nil {
		t.Fatal("revocation line lowered or kept")
	}
}

// TestRotation walks add → overlap → retire: grants signed by the old key
// verify during overlap and are rejected after retirement, though cached.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := testEdKey(t, "k1", 1), testEdKey(t, "k2", 2)
	f := BundleFile{Version: 1, Keys: []BundleKey{bundleEntry(t, dir, k1, KeyActive)}}
	v := NewVerifier(mustBundle(t, f, dir), 0)
	g := testGrant()
	oldProof := mustSign(t, k1, g)
	step := func(name string, edit func() error) {
		t.Helper()
		if err := edit(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := v.Replace(mustBundle(t, f, dir)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := v.Verify(g, oldProof); err != nil {
		t.Fatalf("before rotation: %v", err)
	}
	step("add k2", func() error { return f.AddKey(bundleEntry(t, dir, k2, KeyActive)) })
	step("k1 verify-only", func() error { return f.SetKeyState("k1", KeyVerifyOnly) })
	if err := v.Verify(g, oldProof); err != nil {
		t.Fatalf("overlap: old grant rejected: %v", err)
	}
	if err := v.Verify(g, mustSign(t, k2, g)); err != nil {
		t.Fatalf("overlap: new grant rejected: %v", err)
	}
	step("retire k1", func() error { return f.SetKeyState("k1", KeyRetired) })
	if err := v.Verify(g, oldProof); !errors.Is(err, ErrKeyRetired) {
		t.Fatalf("after retirement: %v", err)
	}
	if err := f.SetKeyState("k1", KeyActive); err == nil {
		t.Fatal("retired key reactivated")
	}
	if f.Version != 4 {
		t.Fatalf("version %d after three edits from 1", f.Version)
	}
}

func mustBundle(t testing.TB, f BundleFile, dir string) *Bundle {
	t.Helper()
	b, err := NewBundle(f, dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReplaceOnlyNewer(t *testing.T) {
	v, _, _ := testVerifier(t)
	dir := t.TempDir()
	k := testEdKey(t, "z", 3)
	for _, version := range []uint64{0, 1} {
		f := BundleFile{Version: version, Keys: []BundleKey{bundleEntry(t, dir, k, KeyActive)}}
		b, err := NewBundle(f, dir)
		if version == 0 {
			if err == nil {
				t.Fatal("version 0 accepted")
			}
			continue
		}
		if err := v.Replace(b); !errors.Is(err, ErrBundleNotNewer) {
			t.Fatalf("equal version replaced: %v", err)
		}
	}
	if _, ok := v.Bundle().keys["k1"]; !ok {
		t.Fatal("bundle changed after refused replace")
	}
}

func TestParseBundleStrict(t *testing.T) {
	dir := t.TempDir()
	k := testEdKey(t, "k1", 0)
	pub := b64.EncodeToString(k.PublicKey())
	good := `{"version":1,"revokedBelowEpoch":0,"keys":[{"keyId":"k1","alg":"ed25519","publicKey":"` + pub + `","minEpoch":1,"maxEpoch":0,"state":"active"}]}`
	if _, err := ParseBundle([]byte(good), dir); err != nil {
		t.Fatalf("good bundle: %v", err)
	}
	bad := map[string]string{
		"unknown top field": `{"version":1,"extra":1,"keys":[]}`,
		"unknown key field": `{"version":1,"keys":[{"keyId":"k1","alg":"ed25519","publicKey":"` + pub + `","minEpoch":1,"state":"active","note":"x"}]}`,
		"trailing data":     good + `{}`,
		"no version":        `{"keys":[]}`,
		"bad alg":           `{"version":1,"keys":[{"keyId":"k1","alg":"rsa","publicKey":"` + pub + `","minEpoch":1,"state":"active"}]}`,
		"short public key":  `{"version":1,"keys":[{"keyId":"k1","alg":"ed25519","publicKey":"AAAA","minEpoch":1,"state":"active"}]}`,
		"bad state":         `{"version":1,"keys":[{"keyId":"k1","alg":"ed25519","publicKey":"` + pub + `","minEpoch":1,"state":"on"}]}`,
		"zero minEpoch":     `{"version":1,"keys":[{"keyId":"k1","alg":"ed25519","publicKey":"` + pub + `","minEpoch":0,"state":"active"}]}`,
		"max below min":     `{"version":1,"keys":[{"keyId":"k1","alg":"ed25519","publicKey":"` + pub + `","minEpoch":5,"maxEpoch":4,"state":"active"}]}`,
		"duplicate key":     `{"version":1,"keys":[{"keyId":"k1","alg":"ed25519","publicKey":"` + pub + `","minEpoch":1,"state":"active"},{"keyId":"k1","alg":"ed25519","publicKey":"` + pub + `","minEpoch":1,"state":"active"}]}`,
		"mac without file":  `{"version":1,"keys":[{"keyId":"m1","alg":"hmac-sha256","minEpoch":1,"state":"active"}]}`,
		"missing mac file":  `{"version":1,"keys":[{"keyId":"m1","alg":"hmac-sha256","secretFile":"nope.key","minEpoch":1,"state":"active"}]}`,
	}
	for name, in := range bad {
		if _, err := ParseBundle([]byte(in), dir); !errors.Is(err, ErrBadBundle) {
			t.Errorf("%s: got %v, want ErrBadBundle", name, err)
		}
	}
}

func TestSecretFileMustMatchEntry(t *testing.T) {
	dir := t.TempDir()
	k := testMacKey(t, "m2", 7)
	writeFile(t, dir+"/other.key", k.MarshalKeyFile())
	f := BundleFile{Version: 1, Keys: []BundleKey{{KeyID: "m1", Alg: AlgHMACSHA256, SecretFile: "other.key", MinEpoch: 1, State: KeyActive}}}
	if _, err := NewBundle(f, dir); !errors.Is(err, ErrBadBundle) {
		t.Fatalf("secret file of key m2 accepted for m1: %v", err)
	}
}

func TestCacheBounded(t *testing.T) {
	v, ed, _ := testVerifier(t)
	v.cache = newVerifyCache(64)
	g := testGrant()
	for i := 0; i < 1000; i++ {
		g.FenceToken = uint64(i + 1)
		if err := v.Verify(g, mustSign(t, ed, g)); err != nil {
			t.Fatal(err)
		}
		if n := v.cache.Len(); n > 64 {
			t.Fatalf("cache holds %d entries, bound 64", n)
		}
	}
}

// TestCacheKeyedByMaterial replaces a key's material under the same ID: a
// proof cached under the old material must not verify under the new.
func TestCacheKeyedByMaterial(t *testing.T) {
	dir := t.TempDir()
	a, b := testEdKey(t, "k1", 1), testEdKey(t, "k1", 2)
	v := NewVerifier(mustBundle(t, BundleFile{Version: 1, Keys: []BundleKey{bundleEntry(t, dir, a, KeyActive)}}, dir), 0)
	g := testGrant()
	p := mustSign(t, a, g)
	if err := v.Verify(g, p); err != nil {
		t.Fatal(err)
	}
	if err := v.Replace(mustBundle(t, BundleFile{Version: 2, Keys: []BundleKey{bundleEntry(t, dir, b, KeyActive)}}, dir)); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(g, p); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("cached proof survived key replacement: %v", err)
	}
}

func TestCodeOf(t *testing.T) {
	_, err := ParseGrant([]byte("x"))
	if CodeOf(err) != "MALFORMED" || CodeOf(nil) != "" || CodeOf(errors.New("x")) != "" {
		t.Fatalf("CodeOf: %q", CodeOf(err))
	}
}
