// Fuzz targets for the trust bundle: ParseBundle never panics, rejects
// only with BAD_BUNDLE, accepts no field given twice or in another letter
// case, and the canonical form (Marshal) of what it accepts parses back to
// itself; VerifyUpdate accepts no successor but the one the key in force
// signed, and every refusal carries a stable code.
// Seed corpus: testdata/fuzz/<Target>/. Run:
// go test ./grant -run '^$' -fuzz '^FuzzParseBundle$' -parallel 2
package grant

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/jsonkeys"
)

// bundleJSONNames are the field names of BundleFile and BundleKey, exactly
// as the format spells them.
var bundleJSONNames = map[string]bool{
	"version": true, "revokedBelowEpoch": true, "keys": true, "keyId": true, "alg": true,
	"publicKey": true, "secretFile": true, "minEpoch": true, "maxEpoch": true, "state": true,
}

// fuzzBundleFile is a bundle of one Ed25519 and one HMAC key (its secret
// file written to dir).
func fuzzBundleFile(t testing.TB, dir string) BundleFile {
	ed, mac := testEdKey(t, "k1", 0), testMacKey(t, "m1", 100)
	return BundleFile{Version: 3, RevokedBelowEpoch: 2, Keys: []BundleKey{
		bundleEntry(t, dir, ed, KeyActive), bundleEntry(t, dir, mac, KeyVerifyOnly),
	}}
}

// parseBundleSeeds are a genuine bundle file and two near-misses.
func parseBundleSeeds(t testing.TB, dir string) map[string][]byte {
	good := fuzzBundleFile(t, dir).Marshal()
	return map[string][]byte{
		"genuine":   good,
		"recased":   bytes.Replace(good, []byte(`"version"`), []byte(`"Version"`), 1),
		"duplicate": bytes.Replace(good, []byte(`"state": "active"`), []byte(`"state": "active", "state": "retired"`), 1),
	}
}

func FuzzParseBundle(f *testing.F) {
	dir := f.TempDir()
	fuzzBundleFile(f, dir) // the HMAC key's secret file
	// seeds: testdata/fuzz/FuzzParseBundle, from parseBundleSeeds
	f.Fuzz(func(t *testing.T, b []byte) {
		bn, err := ParseBundle(b, dir)
		if err != nil {
			if CodeOf(err) != "BAD_BUNDLE" {
				t.Fatalf("rejected with code %q, want BAD_BUNDLE: %v", CodeOf(err), err)
			}
			return
		}
		if p := jsonkeys.Problem(b, bundleJSONNames); p != "" {
			t.Fatalf("accepted a bundle with a %s:\n%s", p, b)
		}
		// Marshal is the canonical form (keys sorted by ID; their order
		// means nothing): it must parse back to the same canonical form.
		canon := bn.File().Marshal()
		again, err := ParseBundle(canon, dir)
		if err != nil {
			t.Fatalf("the canonical form of an accepted bundle is rejected: %v", err)
		}
		if !bytes.Equal(again.File().Marshal(), canon) || len(again.File().Keys) != len(bn.File().Keys) {
			t.Fatalf("round trip changed\n%s\ninto\n%s", canon, again.File().Marshal())
		}
	})
}

// verifyUpdateSeeds returns the bundle in force and signed successors:
// the genuine one (version 4, key k2 added, signed by k1, the only newer
// text a key in force ever signed) and near-misses: signed only by the
// key it adds, not newer, dropping a key.
func verifyUpdateSeeds(t testing.TB, dir string) (*Bundle, map[string]SignedBundle) {
	cur := fuzzBundleFile(t, dir)
	b, err := NewBundle(cur, dir)
	if err != nil {
		t.Fatal(err)
	}
	k1, k2 := testEdKey(t, "k1", 0), testEdKey(t, "k2", 50)
	next := cur
	next.Version, next.Keys = 4, append(append([]BundleKey{}, cur.Keys...), bundleEntry(t, dir, k2, KeyActive))
	drops := next
	drops.Keys = drops.Keys[1:]
	sign := func(bf BundleFile, k *SigningKey) SignedBundle {
		sb, err := SignBundle(bf, k)
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	return b, map[string]SignedBundle{
		"genuine": sign(next, k1), "signed-by-added-key": sign(next, k2),
		"not-newer": sign(cur, k1), "drops-key": sign(drops, k1),
	}
}

// FuzzVerifyUpdate offers arbitrary successors to a bundle in force:
// only the genuine one may be accepted.
func FuzzVerifyUpdate(f *testing.F) {
	dir := f.TempDir()
	b, seeds := verifyUpdateSeeds(f, dir) // seeds: testdata/fuzz/FuzzVerifyUpdate
	genuine := seeds["genuine"]
	f.Fuzz(func(t *testing.T, text, proof string) {
		nb, err := b.VerifyUpdate(SignedBundle{Bundle: text, Proof: proof}, dir)
		if err != nil {
			if nb != nil || CodeOf(err) == "" {
				t.Fatalf("refusal without a stable code (or with a bundle): %v", err)
			}
			return
		}
		if text != genuine.Bundle || proof != genuine.Proof {
			t.Fatalf("accepted a successor nobody signed:\n%s\nproof %s", text, proof)
		}
	})
}

// TestParseBundleRejectsAmbiguousJSON pins what FuzzParseBundle found:
// encoding/json alone keeps the last of two equal fields and matches names
// in any letter case, so one bundle file could read two ways.
func TestParseBundleRejectsAmbiguousJSON(t *testing.T) {
	dir := t.TempDir()
	good := string(fuzzBundleFile(t, dir).Marshal())
	for name, in := range map[string]string{
		"key state twice": strings.Replace(good, `"state": "active"`, `"state": "active", "state": "retired"`, 1),
		"version twice":   strings.Replace(good, `"version": 3`, `"version": 3, "version": 9`, 1),
		"re-cased field":  strings.Replace(good, `"revokedBelowEpoch"`, `"RevokedBelowEpoch"`, 1),
		"re-cased in key": strings.Replace(good, `"minEpoch"`, `"MinEpoch"`, 1),
		"unknown field":   strings.Replace(good, `"keys"`, `"extra": 1, "keys"`, 1),
		"object for list": strings.Replace(good, `"keys": [`, `"keys": {"a": [`, 1),
		"trailing data":   good + "{}",
	} {
		if _, err := ParseBundle([]byte(in), dir); !errors.Is(err, ErrBadBundle) {
			t.Errorf("%s: %v, want BAD_BUNDLE", name, err)
		}
	}
	if _, err := ParseBundle([]byte(good), dir); err != nil {
		t.Fatal(err)
	}
	k := testMacKey(t, "m2", 7).MarshalKeyFile()
	twice := bytes.Replace(k, []byte(`"alg"`), []byte(`"keyId": "m3", "alg"`), 1)
	if _, err := ParseKeyFile(twice); !errors.Is(err, ErrBadBundle) {
		t.Errorf("key file with keyId twice: %v", err)
	}
}
