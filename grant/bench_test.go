// Benchmarks for the per-segment costs a gate pays: parse, verify (cold
// Ed25519, HMAC, cached) and sign. Run: go test ./grant -run ^$ -bench . -count 5
package grant

import "testing"

func BenchmarkParse(b *testing.B) {
	raw := testGrant().Encode()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := ParseGrant(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func benchVerify(b *testing.B, mac bool, cached bool) {
	v, ed, m := testVerifier(b)
	if !cached {
		v.cache = newVerifyCache(-1)
	}
	k := ed
	if mac {
		k = m
	}
	g := testGrant()
	p := mustSign(b, k, g)
	for b.Loop() {
		if err := v.Verify(g, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyEd25519(b *testing.B) { benchVerify(b, false, false) }
func BenchmarkVerifyHMAC(b *testing.B)    { benchVerify(b, true, false) }
func BenchmarkVerifyCached(b *testing.B)  { benchVerify(b, false, true) }

func BenchmarkSign(b *testing.B) {
	k := testEdKey(b, "k1", 0)
	g := testGrant()
	for b.Loop() {
		if _, err := k.Sign(g); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyDigestCached is the gate's path: it hashes the bytes it
// received once per mutation and asks by digest.
func BenchmarkVerifyDigestCached(b *testing.B) {
	v, ed, _ := testVerifier(b)
	g := testGrant()
	p := mustSign(b, ed, g)
	d := g.Digest()
	for b.Loop() {
		if err := v.VerifyDigest(SchemaGrant, d, g.IssuerEpoch, p); err != nil {
			b.Fatal(err)
		}
	}
}
