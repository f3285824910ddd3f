package grant

import (
	"crypto/sha256"
	"fmt"
)

// SchemaBundle is the domain separator of a trust-bundle proof: a proof
// over a bundle never verifies as a grant or status proof, nor the reverse.
const SchemaBundle = "trustBundle.v1"

// Bundle distribution errors.
var (
	// ErrBundleUnsigned: a published bundle without an Ed25519 proof (an
	// HMAC key cannot sign bundles: every gate holds its secret).
	ErrBundleUnsigned = &Error{"BUNDLE_UNSIGNED", "bundle not signed"}
	// ErrBundleRegression: a newer bundle that would undo what the one in
	// force decided: a lower revokedBelowEpoch, a key state moving back, a
	// key dropped or its material changed.
	ErrBundleRegression = &Error{"BUNDLE_REGRESSION", "bundle regression"}
)

// SignedBundle is a trust bundle as a registry publishes it (GET
// /v1/trust-bundle): the bundle file's exact bytes and an Ed25519 proof
// over their SHA-256 under SchemaBundle.
type SignedBundle struct {
	Bundle string `json:"bundle"` // BundleFile.Marshal output
	Proof  string `json:"proof"`  // sig:<keyId>:<b64>
}

// SignBundle signs f's canonical form with k, which must be an Ed25519
// key. f must be valid.
func SignBundle(f BundleFile, k *SigningKey) (SignedBundle, error) {
	if err := f.Validate(); err != nil {
		return SignedBundle{}, err
	}
	if k.Alg != AlgEd25519 {
		return SignedBundle{}, fmt.Errorf("%w: key %s is %s; only Ed25519 keys sign bundles", ErrBundleUnsigned, k.KeyID, k.Alg)
	}
	b := f.Marshal()
	return SignedBundle{Bundle: string(b), Proof: k.signDigest(SchemaBundle, sha256.Sum256(b)).String()}, nil
}

// VerifyUpdate accepts sb as the successor of b, the bundle in force, and
// returns it loaded (HMAC secret files resolved relative to dir), or an
// error and nothing. It accepts only if:
//
//   - the proof is Ed25519, by a key of b (the bundle in force, never the
//     offered one) that b has not retired, and verifies over sb.Bundle;
//   - sb.Bundle parses strictly and its version is above b's;
//   - it undoes nothing: revokedBelowEpoch does not drop, and every key of
//     b is still there with the same algorithm and material and a state
//     no earlier than b's (so a retired key never returns).
//
// Rotation therefore goes through a bundle signed by a key both sides
// trust: publish the bundle adding the new key while the old one still
// signs, then switch the registry to the new key.
func (b *Bundle) VerifyUpdate(sb SignedBundle, dir string) (*Bundle, error) {
	p, err := ParseProof(sb.Proof)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundleUnsigned, err)
	}
	if p.Alg != AlgEd25519 {
		return nil, fmt.Errorf("%w: proof by %s key %s", ErrBundleUnsigned, p.Alg, p.KeyID)
	}
	k, ok := b.keys[p.KeyID]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: bundle signed by %q, not a key of version %d", ErrUnknownKey, p.KeyID, b.file.Version)
	case k.Alg != AlgEd25519:
		return nil, fmt.Errorf("%w: key %s is %s", ErrAlgMismatch, k.KeyID, k.Alg)
	case k.State == KeyRetired:
		return nil, fmt.Errorf("%w: key %s signed the bundle", ErrKeyRetired, k.KeyID)
	}
	if err := k.check(SchemaBundle, sha256.Sum256([]byte(sb.Bundle)), p); err != nil {
		return nil, err
	}
	next, err := ParseBundle([]byte(sb.Bundle), dir)
	if err != nil {
		return nil, err
	}
	if next.Version() <= b.Version() {
		return nil, fmt.Errorf("%w: have version %d, offered %d", ErrBundleNotNewer, b.Version(), next.Version())
	}
	if err := b.undoneBy(next); err != nil {
		return nil, err
	}
	return next, nil
}

// undoneBy names the first decision of b that next would undo.
func (b *Bundle) undoneBy(next *Bundle) error {
	if next.file.RevokedBelowEpoch < b.file.RevokedBelowEpoch {
		return fmt.Errorf("%w: revokedBelowEpoch %d → %d", ErrBundleRegression, b.file.RevokedBelowEpoch, next.file.RevokedBelowEpoch)
	}
	for id, old := range b.keys {
		nk, ok := next.keys[id]
		switch {
		case !ok:
			return fmt.Errorf("%w: key %s dropped (retire it instead)", ErrBundleRegression, id)
		case nk.fingerprint != old.fingerprint || nk.Alg != old.Alg:
			return fmt.Errorf("%w: key %s changed its material", ErrBundleRegression, id)
		case keyStateRank[nk.State] < keyStateRank[old.State]:
			return fmt.Errorf("%w: key %s %s → %s", ErrBundleRegression, id, old.State, nk.State)
		}
	}
	return nil
}

// TrustOnFirstUse loads sb, a bundle as a registry publishes it, the
// first time a process sees one: it accepts the bundle only if its proof
// is Ed25519 by one of its own active or verify-only keys and verifies
// over its bytes — a bundle that vouches for itself. That proves the
// bytes came whole from a holder of a key in them, nothing more: the
// trust is in the channel it came over (TLS to the registry) or in a
// bundle file pinned beforehand. Every later bundle must pass
// VerifyUpdate against the one in force.
func TrustOnFirstUse(sb SignedBundle, dir string) (*Bundle, error) {
	b, err := ParseBundle([]byte(sb.Bundle), dir)
	if err != nil {
		return nil, err
	}
	p, err := ParseProof(sb.Proof)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundleUnsigned, err)
	}
	k, ok := b.keys[p.KeyID]
	switch {
	case p.Alg != AlgEd25519 || !ok || k.Alg != AlgEd25519:
		return nil, fmt.Errorf("%w: the bundle is not signed by an Ed25519 key of its own (%s key %q)", ErrBundleUnsigned, p.Alg, p.KeyID)
	case k.State == KeyRetired:
		return nil, fmt.Errorf("%w: key %s signed the bundle", ErrKeyRetired, k.KeyID)
	}
	if err := k.check(SchemaBundle, sha256.Sum256([]byte(sb.Bundle)), p); err != nil {
		return nil, err
	}
	return b, nil
}
