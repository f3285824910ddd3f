package grant

import (
	"crypto/ed25519"
	"crypto/hmac"
	"fmt"
	"sync/atomic"
)

// VerifyCacheEntriesMax is the default bound on cached verifications.
// One entry is about 250 bytes, so the default costs about 1 MiB.
const VerifyCacheEntriesMax = 4096

// VerifyRootCacheEntriesMax bounds the cache of verified batch roots, 1024
// entries of about 200 bytes (some 200 KiB): a gate meets the grants of a
// batch within moments of each other, so a root is looked up soon after
// it was verified or not at all.
const VerifyRootCacheEntriesMax = 1024

// Verifier checks proofs against a trust bundle. It is safe for concurrent
// use. The bundle can be replaced only by a newer version (Replace).
//
// Policy checks (key known, algorithm, key state, epoch allowed, epoch not
// revoked) run on every call against the current bundle; only the
// cryptographic check is cached, keyed by (schema, message digest, proof)
// and remembering the key material it passed under, so re-verifying the
// same grant on every segment costs a hash and a map lookup, a retired key
// or revoked epoch takes effect at once, and a key ID re-bound to other
// material misses.
type Verifier struct {
	bundle atomic.Pointer[Bundle]
	cache  *verifyCache
	roots  *rootCache
}

// NewVerifier returns a Verifier over b with a cache of cacheEntriesMax
// entries (VerifyCacheEntriesMax if 0; negative disables caching, of
// proofs and of batch roots alike) and a cache of
// VerifyRootCacheEntriesMax verified batch roots.
func NewVerifier(b *Bundle, cacheEntriesMax int) *Verifier {
	if cacheEntriesMax == 0 {
		cacheEntriesMax = VerifyCacheEntriesMax
	}
	rootsMax := VerifyRootCacheEntriesMax
	if cacheEntriesMax < 0 {
		rootsMax = -1
	}
	v := &Verifier{cache: newVerifyCache(cacheEntriesMax), roots: newRootCache(rootsMax)}
	v.bundle.Store(b)
	return v
}

// Bundle returns the bundle in force.
func (v *Verifier) Bundle() *Bundle { return v.bundle.Load() }

// Replace installs b if its version is above the one in force; otherwise it
// returns ErrBundleNotNewer and changes nothing.
func (v *Verifier) Replace(b *Bundle) error {
	for {
		cur := v.bundle.Load()
		if b.Version() <= cur.Version() {
			return fmt.Errorf("%w: have version %d, offered %d", ErrBundleNotNewer, cur.Version(), b.Version())
		}
		if v.bundle.CompareAndSwap(cur, b) {
			return nil
		}
	}
}

// Verify checks proof for m. It returns nil only if the proof's key is in
// the bundle, is not retired, has the proof's algorithm, may sign m's issuer
// epoch, the epoch is not revoked, and the signature or MAC verifies over
// m's schema and digest — or, for a batch proof, the message's leaf and
// path fold into a root the key signed (a root verified before is taken
// from a bounded cache, its policy re-applied: a batch costs one
// signature verification). Errors wrap exactly one sentinel of this package.
// Verify does not Validate m: messages from ParseGrant/ParseStatus already
// are, and an invalid message cannot carry a valid proof.
func (v *Verifier) Verify(m Message, proof string) error {
	return v.VerifyDigest(m.Schema(), m.Digest(), m.Epoch(), proof)
}

// VerifyDigest is Verify for a caller that already has the digest (a gate
// hashes the received bytes, which for a parsed message equal Encode()).
func (v *Verifier) VerifyDigest(schema string, d Digest, epoch uint64, proof string) error {
	b := v.bundle.Load()
	ck := cacheKey{schema: schema, digest: d, proof: proof}
	if hit, ok := v.cache.Get(ck); ok {
		// The signature was checked under this key material before; the
		// policy is re-applied to the bundle in force now.
		k, err := b.keyFor(hit.alg, hit.keyID, epoch)
		if err == nil && k.fingerprint == hit.fingerprint {
			return nil
		}
		if err != nil {
			return err
		}
	}
	k, err := v.verifyProof(b, schema, d, epoch, proof)
	if err != nil {
		return err
	}
	v.cache.Add(ck, cachedKey{alg: k.Alg, keyID: k.KeyID, fingerprint: k.fingerprint})
	return nil
}

// keyFor applies the bundle's policy to a proof's key for an epoch.
func (b *Bundle) keyFor(alg Alg, keyID string, epoch uint64) (*trustedKey, error) {
	k, ok := b.keys[keyID]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %q (bundle version %d)", ErrUnknownKey, keyID, b.file.Version)
	case k.Alg != alg:
		return nil, fmt.Errorf("%w: key %s is %s, proof claims %s", ErrAlgMismatch, k.KeyID, k.Alg, alg)
	case k.State == KeyRetired:
		return nil, fmt.Errorf("%w: key %s", ErrKeyRetired, k.KeyID)
	case epoch < b.file.RevokedBelowEpoch:
		return nil, fmt.Errorf("%w: epoch %d < revokedBelowEpoch %d", ErrEpochRevoked, epoch, b.file.RevokedBelowEpoch)
	case epoch < k.MinEpoch || k.MaxEpoch != 0 && epoch > k.MaxEpoch:
		return nil, fmt.Errorf("%w: epoch %d, key %s allows [%d, %s]", ErrEpochNotAllowed, epoch, k.KeyID, k.MinEpoch, maxEpochText(k.MaxEpoch))
	}
	return k, nil
}

func maxEpochText(max uint64) string {
	if max == 0 {
		return "∞"
	}
	return fmt.Sprint(max)
}

// check verifies the signature or MAC itself.
func (k *trustedKey) check(schema string, d Digest, p Proof) error {
	in := signingInput(schema, d)
	if k.Alg == AlgEd25519 {
		if !scalarCanonical(p.Bytes[32:]) {
			return fmt.Errorf("%w: S >= L (key %s)", ErrNonCanonicalSignature, k.KeyID)
		}
		if !ed25519.Verify(k.pub, in, p.Bytes) {
			return fmt.Errorf("%w: %s over %s (key %s)", ErrBadSignature, schema, d, k.KeyID)
		}
		return nil
	}
	if !hmac.Equal(macSum(k.secret, in), p.Bytes) {
		return fmt.Errorf("%w: %s over %s (key %s)", ErrBadSignature, schema, d, k.KeyID)
	}
	return nil
}

// verifyProof checks a single or batch proof, uncached, and returns the
// key it verified under.
func (v *Verifier) verifyProof(b *Bundle, schema string, d Digest, epoch uint64, proof string) (*trustedKey, error) {
	if IsBatchProof(proof) {
		return v.verifyBatch(b, schema, d, epoch, proof)
	}
	p, err := ParseProof(proof)
	if err != nil {
		return nil, err
	}
	k, err := b.keyFor(p.Alg, p.KeyID, epoch)
	if err != nil {
		return nil, err
	}
	return k, k.check(schema, d, p)
}

// verifyBatch checks a batch proof: parse, policy, the leaf folded with
// the path into a root, and that root's signature — from the root cache
// when this key's material verified the same (size, root, signature)
// before. The cache is keyed by the computed root, so a forged path
// beside a cached root computes another root and misses: it never makes
// a bad proof pass.
func (v *Verifier) verifyBatch(b *Bundle, schema string, d Digest, epoch uint64, proof string) (*trustedKey, error) {
	p, err := ParseBatchProof(proof)
	if err != nil {
		return nil, err
	}
	k, err := b.keyFor(AlgEd25519, p.KeyID, epoch)
	if err != nil {
		return nil, err
	}
	root, ok := BatchRootFromPath(BatchLeaf(schema, d), p.Index, p.Size, p.Path)
	if !ok { // ParseBatchProof checked the length; kept as the fold's own guard
		return nil, fmt.Errorf("%w: batch: path length", ErrMalformedProof)
	}
	rk := rootKey{keyID: k.KeyID, size: p.Size, root: root, sig: [ed25519.SignatureSize]byte(p.Signature)}
	if fp, ok := v.roots.Get(rk); ok && fp == k.fingerprint {
		return k, nil
	}
	if !scalarCanonical(p.Signature[32:]) {
		return nil, fmt.Errorf("%w: S >= L (key %s)", ErrNonCanonicalSignature, k.KeyID)
	}
	if !ed25519.Verify(k.pub, batchSigningInput(p.Size, root), p.Signature) {
		return nil, fmt.Errorf("%w: %s leaf %d of %d over %s (key %s)", ErrBadSignature, schema, p.Index, p.Size, d, k.KeyID)
	}
	v.roots.Add(rk, k.fingerprint)
	return k, nil
}
