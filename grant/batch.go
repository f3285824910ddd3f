package grant

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Batch proofs: one Ed25519 signature over the root of a Merkle tree of
// messages, each message carrying its inclusion path.
//
//	batch:<keyId>:<index>/<size>:<base64url signature>:<base64url path>
//
// The tree is RFC 9162's (Certificate Transparency v2) over size leaves,
// 1..BatchLeavesMax:
//
//	leaf(m)  = SHA-256(0x00 || "fencegate/proof/v1\x00" || schema || 0x00 || digest)
//	node(l,r) = SHA-256(0x01 || l || r)
//
// so a leaf never hashes like an inner node (no second preimage between
// them), and a leaf names its message type as a single proof does. The
// signature is over
//
//	"fencegate/proof/v1\x00" || "grantBatch.v1" || 0x00 || u64be(size) || root
//
// (a batch signature never verifies as a single proof, nor a single proof
// as a batch's, and the size is signed, so an index or size claimed for
// another tree shape changes what must verify). The path is the siblings
// from the leaf up, 32 bytes each, exactly as many as the tree's shape at
// (index, size) has (at most BatchPathLenMax); the root is computed from
// leaf and path, never carried, so it cannot disagree with them. A batch
// of one has an empty path and signs its leaf.
//
// The key fixes the algorithm, as for single proofs: batch proofs are
// Ed25519 only (an HMAC is as cheap as a tree hash; nothing to save).

// SchemaBatch is the domain-separation tag of a batch root's signature.
const SchemaBatch = "grantBatch.v1"

// BatchPathLenMax bounds an inclusion path: 8 siblings, so a tree holds at
// most BatchLeavesMax (256) messages. The registry's signing groups are
// far smaller (one group commit of the store carries 32 commits by
// default); the bound keeps a proof text within BatchProofBytesMax.
const BatchPathLenMax = 8

// BatchLeavesMax is the largest tree a batch proof may name, 2^BatchPathLenMax.
const BatchLeavesMax = 1 << BatchPathLenMax

// BatchProofBytesMax bounds a batch proof's text: prefix, a key ID of
// KeyIDBytesMax, "255/256", an 86-character signature and a full path of
// 342 characters come to 508.
const BatchProofBytesMax = 512

// batchPrefix starts a batch proof's text.
const batchPrefix = "batch:"

// IsBatchProof reports whether proof text claims to be a batch proof (it
// may still be malformed).
func IsBatchProof(s string) bool { return strings.HasPrefix(s, batchPrefix) }

// BatchProof is a parsed batch proof.
type BatchProof struct {
	KeyID     string
	Index     int      // the message's leaf, 0 <= Index < Size
	Size      int      // leaves in the tree, 1..BatchLeavesMax
	Signature []byte   // Ed25519 over the root, ed25519.SignatureSize bytes
	Path      []Digest // siblings from the leaf up, BatchPathLen(Index, Size) of them
}

// String returns the canonical proof text.
func (p BatchProof) String() string {
	path := make([]byte, 0, len(p.Path)*sha256.Size)
	for _, d := range p.Path {
		path = append(path, d[:]...)
	}
	return batchPrefix + p.KeyID + ":" + strconv.Itoa(p.Index) + "/" + strconv.Itoa(p.Size) + ":" +
		b64.EncodeToString(p.Signature) + ":" + b64.EncodeToString(path)
}

// BatchPathLen is how many siblings the path of leaf index in a tree of
// size leaves has; -1 unless 0 <= index < size <= BatchLeavesMax.
func BatchPathLen(index, size int) int {
	if index < 0 || index >= size || size > BatchLeavesMax {
		return -1
	}
	n := 0
	for ; size > 1; index, size = index>>1, (size+1)>>1 {
		if index^1 < size {
			n++
		}
	}
	return n
}

// ParseBatchProof parses batch proof text strictly: the prefix, a valid
// key ID, index and size in canonical decimal with 0 <= index < size <=
// BatchLeavesMax, a canonical unpadded base64url signature of 64 bytes
// and a path of exactly BatchPathLen(index, size) digests. Errors wrap
// ErrMalformedProof.
func ParseBatchProof(s string) (BatchProof, error) {
	fail := func(format string, args ...any) (BatchProof, error) {
		return BatchProof{}, fmt.Errorf("%w: batch: %s", ErrMalformedProof, fmt.Sprintf(format, args...))
	}
	if len(s) > BatchProofBytesMax {
		return fail("%d bytes, limit %d", len(s), BatchProofBytesMax)
	}
	rest, ok := strings.CutPrefix(s, batchPrefix)
	f := strings.Split(rest, ":")
	if !ok || len(f) != 4 {
		return fail("want batch:<keyId>:<index>/<size>:<signature>:<path>")
	}
	if err := ValidateKeyID(f[0]); err != nil {
		return fail("key ID: %v", err)
	}
	is, ss, ok := strings.Cut(f[1], "/")
	index, ierr := parseSmall(is)
	size, serr := parseSmall(ss)
	if !ok || ierr != nil || serr != nil {
		return fail("want <index>/<size> in decimal without leading zeros")
	}
	want := BatchPathLen(index, size)
	if want < 0 {
		return fail("index %d of %d leaves (at most %d)", index, size, BatchLeavesMax)
	}
	sig, err := b64.DecodeString(f[2])
	if err != nil || b64.EncodeToString(sig) != f[2] || len(sig) != ed25519.SignatureSize {
		return fail("signature: want %d bytes, canonical unpadded base64url", ed25519.SignatureSize)
	}
	raw, err := b64.DecodeString(f[3])
	if err != nil || b64.EncodeToString(raw) != f[3] || len(raw) != want*sha256.Size {
		return fail("path: want %d digests for leaf %d of %d, canonical unpadded base64url", want, index, size)
	}
	p := BatchProof{KeyID: f[0], Index: index, Size: size, Signature: sig, Path: make([]Digest, want)}
	for i := range p.Path {
		copy(p.Path[i][:], raw[i*sha256.Size:])
	}
	return p, nil
}

// parseSmall parses a canonical decimal of at most 3 digits (the largest
// index or size, 256, has 3).
func parseSmall(s string) (int, error) {
	if s == "" || len(s) > 3 || s[0] == '0' && len(s) > 1 {
		return 0, fmt.Errorf("not canonical")
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("not a digit")
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, nil
}

// BatchLeaf is the leaf hash of a message with schema and digest.
func BatchLeaf(schema string, d Digest) Digest {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(signingInput(schema, d))
	var out Digest
	h.Sum(out[:0])
	return out
}

// batchNode is an inner node's hash.
func batchNode(l, r Digest) Digest {
	var b [1 + 2*sha256.Size]byte
	b[0] = 1
	copy(b[1:], l[:])
	copy(b[1+sha256.Size:], r[:])
	return sha256.Sum256(b[:])
}

// BatchRootFromPath folds a leaf and its path into the tree's root; false
// when the path's length is not the one (index, size) has.
func BatchRootFromPath(leaf Digest, index, size int, path []Digest) (Digest, bool) {
	if BatchPathLen(index, size) != len(path) {
		return Digest{}, false
	}
	r, k := leaf, 0
	for ; size > 1; index, size = index>>1, (size+1)>>1 {
		if index^1 >= size {
			continue // the last node of an odd level goes up as it is
		}
		if index&1 == 1 {
			r = batchNode(path[k], r)
		} else {
			r = batchNode(r, path[k])
		}
		k++
	}
	return r, true
}

// batchTree returns the tree's levels, leaves first, root last (alone).
func batchTree(leaves []Digest) [][]Digest {
	levels := [][]Digest{leaves}
	for cur := leaves; len(cur) > 1; {
		next := make([]Digest, (len(cur)+1)/2)
		for i := range next {
			if 2*i+1 < len(cur) {
				next[i] = batchNode(cur[2*i], cur[2*i+1])
			} else {
				next[i] = cur[2*i]
			}
		}
		levels = append(levels, next)
		cur = next
	}
	return levels
}

// batchPath is leaf index's path in levels (batchTree).
func batchPath(levels [][]Digest, index int) []Digest {
	var path []Digest
	for _, lv := range levels[:len(levels)-1] {
		if index^1 < len(lv) {
			path = append(path, lv[index^1])
		}
		index >>= 1
	}
	return path
}

// batchSigningInput is what a batch's signature covers.
func batchSigningInput(size int, root Digest) []byte {
	b := make([]byte, 0, len(proofDomain)+len(SchemaBatch)+1+8+len(root))
	b = append(b, proofDomain...)
	b = append(b, SchemaBatch...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(size))
	return append(b, root[:]...)
}

// SignBatch validates every message and returns one proof text per
// message, in order: with an Ed25519 key and two or more messages, batch
// proofs under one signature over their tree's root; with one message,
// a batch of one (its leaf signed, an empty path). At most BatchLeavesMax
// messages; an HMAC key is refused (ErrAlgMismatch): sign those singly.
func (k *SigningKey) SignBatch(ms []Message) ([]string, error) {
	if k.Alg != AlgEd25519 {
		return nil, fmt.Errorf("%w: batch proofs are ed25519, key %s is %s", ErrAlgMismatch, k.KeyID, k.Alg)
	}
	if len(ms) == 0 || len(ms) > BatchLeavesMax {
		return nil, fmt.Errorf("grant: sign batch: %d messages, want 1..%d", len(ms), BatchLeavesMax)
	}
	leaves := make([]Digest, len(ms))
	for i, m := range ms {
		if err := m.Validate(); err != nil {
			return nil, err
		}
		leaves[i] = BatchLeaf(m.Schema(), m.Digest())
	}
	levels := batchTree(leaves)
	root := levels[len(levels)-1][0]
	sig := ed25519.Sign(k.priv, batchSigningInput(len(ms), root))
	out := make([]string, len(ms))
	for i := range ms {
		out[i] = BatchProof{KeyID: k.KeyID, Index: i, Size: len(ms), Signature: sig, Path: batchPath(levels, i)}.String()
	}
	return out, nil
}
