// Proves batch proofs: the tree is RFC 9162's (checked against its
// recursive definition), every leaf of every tree size 1..BatchLeavesMax
// verifies alone, and a flipped bit, a swapped sibling, a wrong index or
// size, a path from another tree, a subtree passed off as a leaf, or a
// forged path beside a cached root is refused with a stable code; an
// HMAC key signs no batch and an Ed25519 batch proof never verifies
// under an HMAC key's ID.
package grant

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

// batchGrants returns n distinct grants (fence 1..n on one resource).
func batchGrants(n int) []Message {
	ms := make([]Message, n)
	for i := range ms {
		g := testGrantHeld()
		g.FenceToken = uint64(i + 1)
		ms[i] = g
	}
	return ms
}

func mustSignBatch(t testing.TB, k *SigningKey, ms []Message) []string {
	t.Helper()
	ps, err := k.SignBatch(ms)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// mth is RFC 9162's MTH, by its recursive definition.
func mth(leaves []Digest) Digest {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	return batchNode(mth(leaves[:k]), mth(leaves[k:]))
}

func TestBatchTreeIsRFC9162(t *testing.T) {
	for n := 1; n <= 70; n++ {
		leaves := make([]Digest, n)
		for i := range leaves {
			leaves[i] = sha256.Sum256([]byte{byte(i), byte(n)})
		}
		levels := batchTree(leaves)
		root := levels[len(levels)-1][0]
		if want := mth(leaves); root != want {
			t.Fatalf("size %d: root %s, RFC 9162 %s", n, root, want)
		}
		for i := range leaves {
			got, ok := BatchRootFromPath(leaves[i], i, n, batchPath(levels, i))
			if !ok || got != root {
				t.Fatalf("size %d leaf %d: path folds to %s (ok %v), root %s", n, i, got, ok, root)
			}
		}
	}
}

// TestBatchEveryLeafVerifies signs every tree size 1..BatchLeavesMax and
// verifies every leaf alone, each size with a fresh verifier (so each
// tree's first leaf verifies the signature and the others may hit the
// cached root).
func TestBatchEveryLeafVerifies(t *testing.T) {
	_, ed, _ := testVerifier(t)
	all := batchGrants(BatchLeavesMax)
	for n := 1; n <= BatchLeavesMax; n++ {
		v, _, _ := testVerifier(t)
		ps := mustSignBatch(t, ed, all[:n])
		for i, p := range ps {
			if len(p) > BatchProofBytesMax {
				t.Fatalf("size %d leaf %d: %d bytes > BatchProofBytesMax", n, i, len(p))
			}
			if err := v.Verify(all[i], p); err != nil {
				t.Fatalf("size %d leaf %d: %v", n, i, err)
			}
		}
	}
}

// refused fails t unless err is one of the stable refusals of a bad
// batch proof.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	switch CodeOf(err) {
	case "MALFORMED_PROOF", "BAD_SIGNATURE", "NON_CANONICAL_SIGNATURE":
	default:
		t.Fatalf("%s: want a stable refusal, got %v", what, err)
	}
}

func TestBatchTamperingRefused(t *testing.T) {
	v, ed, _ := testVerifier(t)
	ms := batchGrants(13)
	ps := mustSignBatch(t, ed, ms)
	for i, p := range ps { // every root cached before the tampering starts
		if err := v.Verify(ms[i], p); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range ps {
		bp, err := ParseBatchProof(p)
		if err != nil {
			t.Fatal(err)
		}
		// Every bit of the decoded signature and path, flipped.
		for j := range bp.Signature {
			for bit := 0; bit < 8; bit++ {
				q := cloneBatch(bp)
				q.Signature[j] ^= 1 << bit
				refused(t, fmt.Sprintf("leaf %d sig byte %d bit %d", i, j, bit), v.Verify(ms[i], q.String()))
			}
		}
		for j := range bp.Path {
			for k := 0; k < sha256.Size; k++ {
				q := cloneBatch(bp)
				q.Path[j][k] ^= 0x80 >> (k % 8)
				refused(t, fmt.Sprintf("leaf %d path %d byte %d", i, j, k), v.Verify(ms[i], q.String()))
			}
		}
		// Every other index and size the text can claim.
		for idx := 0; idx < 16; idx++ {
			for size := 1; size <= 16; size++ {
				if idx == bp.Index && size == bp.Size {
					continue
				}
				q := cloneBatch(bp)
				q.Index, q.Size = idx, size
				refused(t, fmt.Sprintf("leaf %d as %d/%d", i, idx, size), v.Verify(ms[i], q.String()))
			}
		}
		// Siblings swapped, and each sibling replaced by another.
		for j := 1; j < len(bp.Path); j++ {
			q := cloneBatch(bp)
			q.Path[0], q.Path[j] = q.Path[j], q.Path[0]
			refused(t, fmt.Sprintf("leaf %d siblings 0 and %d swapped", i, j), v.Verify(ms[i], q.String()))
		}
		// Another message with this proof.
		refused(t, fmt.Sprintf("leaf %d's proof for leaf %d", i, (i+1)%len(ms)), v.Verify(ms[(i+1)%len(ms)], p))
	}
}

func cloneBatch(p BatchProof) BatchProof {
	q := p
	q.Signature = append([]byte(nil), p.Signature...)
	q.Path = append([]Digest(nil), p.Path...)
	return q
}

// TestBatchPathFromAnotherTree: a message in two trees; its path from
// one with the other's signature, and both with a third's, are refused.
func TestBatchPathFromAnotherTree(t *testing.T) {
	v, ed, _ := testVerifier(t)
	ms := batchGrants(8)
	other := append(batchGrants(8)[:0:0], ms[0])
	other = append(other, batchGrants(16)[8:15]...)
	a, b := mustSignBatch(t, ed, ms), mustSignBatch(t, ed, other)
	pa, _ := ParseBatchProof(a[0])
	pb, _ := ParseBatchProof(b[0])
	for _, p := range []string{a[0], b[0]} {
		if err := v.Verify(ms[0], p); err != nil {
			t.Fatal(err)
		}
	}
	mixed := cloneBatch(pa)
	mixed.Signature = pb.Signature
	refused(t, "tree A's path, tree B's signature", v.Verify(ms[0], mixed.String()))
	mixed = cloneBatch(pb)
	mixed.Signature = pa.Signature
	refused(t, "tree B's path, tree A's signature", v.Verify(ms[0], mixed.String()))
}

// TestBatchForgedPathBesideCachedRoot: a genuine leaf's proof caches its
// root; a grant the registry never signed, sent with the genuine proof's
// signature and every path the test can build from the tree's own nodes,
// is refused — the cache is keyed by the root the path computes.
func TestBatchForgedPathBesideCachedRoot(t *testing.T) {
	v, ed, _ := testVerifier(t)
	ms := batchGrants(8)
	ps := mustSignBatch(t, ed, ms)
	if err := v.Verify(ms[0], ps[0]); err != nil {
		t.Fatal(err)
	}
	forged := testGrantHeld()
	forged.FenceToken = 1 << 40
	leaves := make([]Digest, len(ms))
	for i, m := range ms {
		leaves[i] = BatchLeaf(m.Schema(), m.Digest())
	}
	levels := batchTree(leaves)
	bp, _ := ParseBatchProof(ps[0])
	for i := range ms {
		q := cloneBatch(bp)
		q.Index, q.Path = i, batchPath(levels, i)
		refused(t, fmt.Sprintf("forged grant with leaf %d's path", i), v.Verify(forged, q.String()))
	}
	// A subtree passed off as a leaf: the node over leaves 0 and 1 with
	// the path of a 4-leaf tree above it folds to the 8-leaf root. Verify
	// never takes a leaf from the sender (it hashes the message, 0x00
	// first, where a node's input starts 0x01), so the attack is a
	// message whose leaf is that node; the nearest the sender can come
	// is the 4-leaf shape, refused below.
	n01 := levels[1][0]
	if root, _ := BatchRootFromPath(n01, 0, 4, []Digest{levels[1][1], levels[2][1]}); root != levels[3][0] {
		t.Fatal("the subtree fold is not the root: the test builds no attack")
	}
	// The size is signed: the subtree's 4-leaf shape does not verify
	// under the 8-leaf signature whatever message is named.
	q := BatchProof{KeyID: "k1", Index: 0, Size: 4, Signature: bp.Signature, Path: []Digest{levels[1][1], levels[2][1]}}
	refused(t, "subtree as a 4-leaf tree", v.Verify(forged, q.String()))
}

// TestBatchKeyPolicy: HMAC keys sign no batch; a batch proof under an
// HMAC key's ID, a retired key or a revoked epoch is refused by policy
// even with its root cached.
func TestBatchKeyPolicy(t *testing.T) {
	v, ed, mac := testVerifier(t)
	if _, err := mac.SignBatch(batchGrants(2)); CodeOf(err) != "ALG_MISMATCH" {
		t.Fatalf("HMAC batch: %v", err)
	}
	ms := batchGrants(4)
	ps := mustSignBatch(t, ed, ms)
	if err := v.Verify(ms[0], ps[0]); err != nil {
		t.Fatal(err)
	}
	asMac := strings.Replace(ps[1], "batch:k1:", "batch:m1:", 1)
	if err := v.Verify(ms[1], asMac); CodeOf(err) != "ALG_MISMATCH" {
		t.Fatalf("batch proof under an HMAC key's ID: %v", err)
	}
	dir := t.TempDir()
	nb, err := NewBundle(BundleFile{Version: 2, RevokedBelowEpoch: 38, Keys: []BundleKey{bundleEntry(t, dir, ed, KeyActive)}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Replace(nb); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(ms[1], ps[1]); CodeOf(err) != "EPOCH_REVOKED" {
		t.Fatalf("cached root under a revoked epoch: %v", err)
	}
}

func TestParseBatchProofStrict(t *testing.T) {
	_, ed, _ := testVerifier(t)
	ps := mustSignBatch(t, ed, batchGrants(5))
	good := ps[4] // leaf 4 of 5: no sibling below the top, one there
	p, err := ParseBatchProof(good)
	if err != nil || p.String() != good {
		t.Fatalf("%v %q", err, p.String())
	}
	f := strings.Split(good, ":")
	bad := map[string]string{
		"empty":            "",
		"single prefix":    "sig:" + strings.Join(f[1:], ":"),
		"missing path":     strings.Join(f[:4], ":"),
		"extra field":      good + ":",
		"leading zero":     strings.Replace(good, ":4/5:", ":04/5:", 1),
		"index = size":     strings.Replace(good, ":4/5:", ":5/5:", 1),
		"size 0":           strings.Replace(good, ":4/5:", ":0/0:", 1),
		"size too big":     strings.Replace(good, ":4/5:", ":4/257:", 1),
		"sign":             strings.Replace(good, ":4/5:", ":+4/5:", 1),
		"no slash":         strings.Replace(good, ":4/5:", ":45:", 1),
		"short signature":  strings.Replace(good, f[3], f[3][:85], 1),
		"padded signature": strings.Replace(good, f[3], f[3]+"==", 1),
		"path too long":    good + f[4],
		"path too short":   strings.TrimSuffix(good, f[4]),
		"bad key ID":       strings.Replace(good, "batch:k1:", "batch:k 1:", 1),
		"too long":         good + strings.Repeat("A", BatchProofBytesMax),
	}
	for name, s := range bad {
		if _, err := ParseBatchProof(s); CodeOf(err) != "MALFORMED_PROOF" {
			t.Errorf("%s: %q accepted or wrong code: %v", name, s, err)
		}
	}
	for idx, size := range map[int]int{0: 1, 2: 3, 255: 256} {
		if BatchPathLen(idx, size) < 0 {
			t.Errorf("BatchPathLen(%d, %d) < 0", idx, size)
		}
	}
	if BatchPathLen(0, BatchLeavesMax) != BatchPathLenMax {
		t.Fatalf("a full tree's path is %d, BatchPathLenMax %d", BatchPathLen(0, BatchLeavesMax), BatchPathLenMax)
	}
}

func FuzzParseBatchProof(f *testing.F) {
	ed := testEdKey(f, "k1", 0)
	for _, n := range []int{1, 2, 5, BatchLeavesMax} {
		ps := mustSignBatch(f, ed, batchGrants(n))
		f.Add(ps[0])
		f.Add(ps[n-1])
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseBatchProof(s)
		if err != nil {
			if CodeOf(err) != "MALFORMED_PROOF" {
				t.Fatalf("rejection without code MALFORMED_PROOF: %v", err)
			}
			return
		}
		if p.String() != s || len(s) > BatchProofBytesMax || len(p.Path) != BatchPathLen(p.Index, p.Size) {
			t.Fatalf("accepted non-canonical or unbounded proof %q (canonical %q)", s, p.String())
		}
	})
}

// BenchmarkVerifyBatch: a new grant of a batch whose root is cached (a
// path fold and a map lookup) beside a single proof's verification.
func BenchmarkVerifyBatch(b *testing.B) {
	v, ed, _ := testVerifier(b)
	ms := batchGrants(BatchLeavesMax)
	ps, _ := ed.SignBatch(ms)
	b.Run("cached-root", func(b *testing.B) {
		if err := v.Verify(ms[0], ps[0]); err != nil {
			b.Fatal(err)
		}
		v.cache = newVerifyCache(-1) // no per-proof hits: each leaf is new
		for i := 0; i < b.N; i++ {
			if err := v.Verify(ms[i%len(ms)], ps[i%len(ms)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("single", func(b *testing.B) {
		p := mustSign(b, ed, ms[0])
		v.cache = newVerifyCache(-1) // every call verifies the signature
		for i := 0; i < b.N; i++ {
			if err := v.VerifyDigest(SchemaGrant, ms[0].Digest(), 37, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSignBatch: a batch of one (what an idle registry signs) and a
// batch of 9 (a group commit's grants at 64 resources) beside a single
// signature.
func BenchmarkSignBatch(b *testing.B) {
	ed := testEdKey(b, "k1", 0)
	ms := batchGrants(9)
	b.Run("single", func(b *testing.B) {
		for b.Loop() {
			mustSign(b, ed, ms[0])
		}
	})
	for _, n := range []int{1, 9} {
		b.Run(fmt.Sprintf("batch-of-%d", n), func(b *testing.B) {
			for b.Loop() {
				mustSignBatch(b, ed, ms[:n])
			}
		})
	}
}
