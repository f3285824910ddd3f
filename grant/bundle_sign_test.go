// Proves the trust-bundle update rule: a successor is accepted only when
// signed (Ed25519) by a non-retired key of the bundle in force, newer, and
// undoing nothing; each forgery or rollback is rejected with its code,
// and a rotation add → switch → retire goes through.
package grant

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
)

func bundleKeyOf(k *SigningKey, st KeyState) BundleKey {
	return BundleKey{KeyID: k.KeyID, Alg: k.Alg, PublicKey: EncodeKey(k.PublicKey()), MinEpoch: 1, State: st}
}

func TestBundleUpdate(t *testing.T) {
	k1 := mustKey(t, "k1")
	k2 := mustKey(t, "k2")
	evil := mustKey(t, "evil")
	v1 := BundleFile{Version: 1, Keys: []BundleKey{bundleKeyOf(k1, KeyActive)}}
	cur, err := NewBundle(v1, "")
	if err != nil {
		t.Fatal(err)
	}
	v2 := BundleFile{Version: 2, Keys: []BundleKey{bundleKeyOf(k1, KeyActive), bundleKeyOf(k2, KeyActive)}}
	sign := func(f BundleFile, k *SigningKey) SignedBundle {
		sb, err := SignBundle(f, k)
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	good := sign(v2, k1)
	tampered := good
	tampered.Bundle = string(bytes.Replace([]byte(good.Bundle), []byte(`"version": 2`), []byte(`"version": 9`), 1))
	crossType := good
	crossType.Proof = k1.signDigest(SchemaGrant, sha256.Sum256([]byte(good.Bundle))).String()
	older := sign(BundleFile{Version: 1, Keys: v1.Keys}, k1)
	unRevoke := BundleFile{Version: 3, Keys: v1.Keys}
	withRevoke := BundleFile{Version: 2, RevokedBelowEpoch: 5, Keys: v1.Keys}
	revoked, _ := NewBundle(withRevoke, "")
	for _, c := range []struct {
		name string
		cur  *Bundle
		sb   SignedBundle
		want error
	}{
		{"signed by a key in force", cur, good, nil},
		{"no proof", cur, SignedBundle{Bundle: good.Bundle}, ErrBundleUnsigned},
		{"signed by a key the bundle in force lacks", cur, sign(v2, evil), ErrUnknownKey},
		{"signed only by the key it adds", cur, sign(v2, k2), ErrUnknownKey},
		{"tampered after signing", cur, tampered, ErrBadSignature},
		{"grant proof presented over a bundle", cur, crossType, ErrBadSignature},
		{"not newer", cur, older, ErrBundleNotNewer},
		{"drops a key", cur, sign(BundleFile{Version: 2, Keys: []BundleKey{bundleKeyOf(k2, KeyActive)}}, k1), ErrBundleRegression},
		{"un-revokes epochs", revoked, sign(unRevoke, k1), ErrBundleRegression},
	} {
		got, err := c.cur.VerifyUpdate(c.sb, "")
		if !errors.Is(err, c.want) || (c.want == nil) != (got != nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}

	// Rotation: v2 (k2 added, signed by k1) → v3 (k1 verify-only, signed
	// by k2) → v4 (k1 retired) → v5 un-retiring k1 is refused, and a
	// retired k1 can no longer sign.
	b2, err := cur.VerifyUpdate(good, "")
	if err != nil {
		t.Fatal(err)
	}
	v3 := BundleFile{Version: 3, Keys: []BundleKey{bundleKeyOf(k1, KeyVerifyOnly), bundleKeyOf(k2, KeyActive)}}
	b3, err := b2.VerifyUpdate(sign(v3, k2), "")
	if err != nil {
		t.Fatal(err)
	}
	v4 := BundleFile{Version: 4, Keys: []BundleKey{bundleKeyOf(k1, KeyRetired), bundleKeyOf(k2, KeyActive)}}
	b4, err := b3.VerifyUpdate(sign(v4, k2), "")
	if err != nil {
		t.Fatal(err)
	}
	v5 := BundleFile{Version: 5, Keys: []BundleKey{bundleKeyOf(k1, KeyActive), bundleKeyOf(k2, KeyActive)}}
	if _, err := b4.VerifyUpdate(sign(v5, k2), ""); !errors.Is(err, ErrBundleRegression) {
		t.Errorf("un-retiring k1: %v", err)
	}
	v5.Keys[0].State = KeyRetired
	if _, err := b4.VerifyUpdate(sign(v5, k1), ""); !errors.Is(err, ErrKeyRetired) {
		t.Errorf("a retired key signing: %v", err)
	}
	if _, err := SignBundle(v5, mustHMAC(t)); !errors.Is(err, ErrBundleUnsigned) {
		t.Errorf("HMAC signing a bundle: %v", err)
	}
}

func mustKey(t *testing.T, id string) *SigningKey {
	t.Helper()
	s := sha256.Sum256([]byte("bundle-sign-test/" + id))
	k, err := NewSigningKey(AlgEd25519, id, s[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustHMAC(t *testing.T) *SigningKey {
	t.Helper()
	s := sha256.Sum256([]byte("bundle-sign-test/mac"))
	k, err := NewSigningKey(AlgHMACSHA256, "m1", s[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTrustOnFirstUse: a first bundle is taken only when a key of its own
// signed it; a bundle signed by an outside key, tampered, or signed by
// its retired key is refused.
func TestTrustOnFirstUse(t *testing.T) {
	k1, evil := mustKey(t, "k1"), mustKey(t, "evil")
	f := BundleFile{Version: 4, Keys: []BundleKey{bundleKeyOf(k1, KeyActive)}}
	good, err := SignBundle(f, k1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := TrustOnFirstUse(good, "")
	if err != nil || b.Version() != 4 {
		t.Fatalf("a self-signed bundle: %v", err)
	}
	byOutsider, _ := SignBundle(f, evil)
	tampered := good
	tampered.Bundle = string(bytes.Replace([]byte(good.Bundle), []byte(`"version": 4`), []byte(`"version": 5`), 1))
	retiredFile := BundleFile{Version: 4, Keys: []BundleKey{bundleKeyOf(k1, KeyRetired)}}
	retired, _ := SignBundle(retiredFile, k1)
	for name, c := range map[string]struct {
		sb   SignedBundle
		want error
	}{
		"signed by an outside key":  {byOutsider, ErrBundleUnsigned},
		"tampered after signing":    {tampered, ErrBadSignature},
		"signed by its retired key": {retired, ErrKeyRetired},
		"no proof":                  {SignedBundle{Bundle: good.Bundle}, ErrBundleUnsigned},
	} {
		if _, err := TrustOnFirstUse(c.sb, ""); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}
